//! JSON-RPC framing over Streamable HTTP, handshake era: bodies that are not JSON, JSON that
//! is no message, the framing rules (version, id, method, params), params a method refuses,
//! messages that are answered with nothing, and batches (refused on 2025-11-25, answered item
//! by item on 2025-03-26).

use crate::*;

#[tokio::test]
async fn jsonrpc() {
    let mut bench = Bench::start(config(), None).await;
    let batching = bench.new_session("2025-03-26").await;
    let body = |text: &str| bench.in_session(text.to_string());
    let batch_body = |text: &str| {
        let raw = bench.post(text.to_string()).header("mcp-session-id", &batching);
        raw.header("mcp-protocol-version", "2025-03-26")
    };
    let pings = |n: usize| {
        let pings: Vec<Value> = (0..n).map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).collect();
        Value::Array(pings).to_string()
    };
    let answered = |n: usize| (0..n).map(|id| (json!(id), None)).collect::<Vec<_>>();
    let parse_error = || error(400, -32700, Value::Null, "Parse error");
    let invalid = || error(400, -32600, json!(2), "Invalid Request");
    let bad_id = || refused(400, "Invalid Request: bad id");
    let not_a_string = || error(400, -32600, json!(2), "Invalid Request: method must be a string");
    let not_found = || error(200, -32601, json!(2), "Method not found");
    let not_an_object = || error(400, -32602, json!(2), "params must be an object");
    let refused_param = |message: &str| error(200, -32602, json!(2), message);
    let no_batches = || refused(400, "JSON-RPC batches are not supported by protocol version 2025-11-25");
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"x":{}{}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let rows: Vec<Case> = vec![
        // Not JSON.
        ("an empty body", body(""), parse_error()),
        ("whitespace", body(" \r\n\t "), parse_error()),
        ("an unterminated object", body(r#"{"jsonrpc":"2.0","id":2"#), parse_error()),
        ("a trailing comma", body(r#"{"jsonrpc":"2.0","id":2,"method":"ping",}"#), parse_error()),
        ("single quotes", body("{'jsonrpc':'2.0','id':2,'method':'ping'}"), parse_error()),
        ("a comment", body(r#"{"jsonrpc":"2.0","id":2,"method":"ping"} // hi"#), parse_error()),
        ("text after the message", body(r#"{"jsonrpc":"2.0","id":2,"method":"ping"} x"#), parse_error()),
        (
            "two messages back to back",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}{"jsonrpc":"2.0","id":3,"method":"ping"}"#),
            parse_error(),
        ),
        ("a byte-order mark", body("\u{feff}{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"), parse_error()),
        (
            "invalid UTF-8 in a string",
            bench.in_session(&b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}"[..]),
            parse_error(),
        ),
        (
            "a lone surrogate escape",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"\ud800"}}"#),
            parse_error(),
        ),
        (
            "a raw control character in a string",
            body("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"x\":\"a\u{1}b\"}}"),
            parse_error(),
        ),
        ("NaN", body(r#"{"jsonrpc":"2.0","id":NaN,"method":"ping"}"#), parse_error()),
        ("nesting 10,000 deep", body(&deep), parse_error()),
        // JSON that is no message.
        ("null", body("null"), refused(400, "Invalid Request")),
        ("a number", body("42"), refused(400, "Invalid Request")),
        ("a string", body(r#""ping""#), refused(400, "Invalid Request")),
        ("true", body("true"), refused(400, "Invalid Request")),
        ("an empty object", body("{}"), refused(400, "Invalid Request")),
        ("an empty batch", body("[]"), refused(400, "Invalid Request: empty batch")),
        ("a batch of numbers", body("[1, 2]"), no_batches()),
        ("a batch of a request", body(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#), no_batches()),
        (
            "a batch of a tool call",
            body(r#"[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}]"#),
            no_batches(),
        ),
        (
            "a batch of a request and a notification",
            body(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/nope"}]"#),
            no_batches(),
        ),
        ("a batch of a batch", body("[[]]"), no_batches()),
        // The framing rules.
        ("no jsonrpc member", body(r#"{"id":2,"method":"ping"}"#), invalid()),
        ("jsonrpc 1.0", body(r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#), invalid()),
        ("jsonrpc as a number", body(r#"{"jsonrpc":2.0,"id":2,"method":"ping"}"#), invalid()),
        ("jsonrpc 2.00", body(r#"{"jsonrpc":"2.00","id":2,"method":"ping"}"#), invalid()),
        ("jsonrpc with a space", body(r#"{"jsonrpc":"2.0 ","id":2,"method":"ping"}"#), invalid()),
        ("jsonrpc null", body(r#"{"jsonrpc":null,"id":2,"method":"ping"}"#), invalid()),
        ("id null", body(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#), bad_id()),
        ("id 1.5", body(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#), bad_id()),
        ("id 1.0", body(r#"{"jsonrpc":"2.0","id":1.0,"method":"ping"}"#), bad_id()),
        ("id 1e3", body(r#"{"jsonrpc":"2.0","id":1e3,"method":"ping"}"#), bad_id()),
        ("id true", body(r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#), bad_id()),
        ("id an array", body(r#"{"jsonrpc":"2.0","id":[2],"method":"ping"}"#), bad_id()),
        ("id an object", body(r#"{"jsonrpc":"2.0","id":{"n":2},"method":"ping"}"#), bad_id()),
        ("id past i64", body(r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#), bad_id()),
        ("id past u64", body(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#), bad_id()),
        ("no method", body(r#"{"jsonrpc":"2.0","id":2}"#), invalid()),
        ("method null", body(r#"{"jsonrpc":"2.0","id":2,"method":null}"#), not_a_string()),
        ("method a number", body(r#"{"jsonrpc":"2.0","id":2,"method":5}"#), not_a_string()),
        ("method an array", body(r#"{"jsonrpc":"2.0","id":2,"method":["ping"]}"#), not_a_string()),
        ("an empty method", body(r#"{"jsonrpc":"2.0","id":2,"method":""}"#), not_found()),
        ("an unknown method", body(r#"{"jsonrpc":"2.0","id":2,"method":"no/such"}"#), not_found()),
        ("a method in other case", body(r#"{"jsonrpc":"2.0","id":2,"method":"Tools/List"}"#), not_found()),
        ("a JSON-RPC reserved method", body(r#"{"jsonrpc":"2.0","id":2,"method":"rpc.discover"}"#), not_found()),
        (
            "a notification sent as a request",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"notifications/initialized"}"#),
            not_found(),
        ),
        ("a 2026-only method", body(r#"{"jsonrpc":"2.0","id":2,"method":"server/discover"}"#), not_found()),
        (
            "subscriptions/listen",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{}}}"#),
            not_found(),
        ),
        ("id -5 is an id", body(r#"{"jsonrpc":"2.0","id":-5,"method":"ping"}"#), served()),
        // Params.
        ("params an array", body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[1]}"#), not_an_object()),
        ("params a string", body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":"x"}"#), not_an_object()),
        ("params a number", body(r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":3}"#), not_an_object()),
        ("params false", body(r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":false}"#), not_an_object()),
        (
            "a cursor never issued",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"zzz"}}"#),
            refused_param("Invalid cursor"),
        ),
        (
            "a cursor that is a number",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":5}}"#),
            refused_param("Invalid cursor"),
        ),
        (
            "tools/call without a name",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}"#),
            refused_param("Missing or invalid parameter: name"),
        ),
        (
            "tools/call with a numeric name",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}"#),
            refused_param("Missing or invalid parameter: name"),
        ),
        (
            "tools/call with an empty name",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":""}}"#),
            refused_param("Missing or invalid parameter: name"),
        ),
        (
            "tools/call of an unknown tool",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}"#),
            refused_param("Unknown tool: nope"),
        ),
        (
            "tools/call with arguments an array",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#),
            refused_param("arguments must be an object"),
        ),
        (
            "tools/call with arguments a string",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":"x"}}"#),
            refused_param("arguments must be an object"),
        ),
        (
            "resources/read without a uri",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{}}"#),
            refused_param("Missing or invalid parameter: uri"),
        ),
        (
            "resources/read of a uri that is no URI",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"secret/key.txt"}}"#),
            error(400, -32602, json!(2), "Invalid parameter uri: not a valid URI: relative URL without a base"),
        ),
        (
            "resources/subscribe of a uri with a broken IPv6 host",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://[::1/x"}}"#),
            error(400, -32602, json!(2), "Invalid parameter uri: not a valid URI: invalid IPv6 address"),
        ),
        (
            "resources/read of an unknown resource",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://nope"}}"#),
            error(200, -32002, json!(2), "Unknown resource: test://nope"),
        ),
        (
            "prompts/get of an unknown prompt",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"nope"}}"#),
            refused_param("Unknown prompt: nope"),
        ),
        (
            "logging/setLevel to no level",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}}"#),
            refused_param("Invalid log level: 'loud'"),
        ),
        (
            "logging/setLevel without a level",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{}}"#),
            refused_param("Invalid log level: missing"),
        ),
        (
            "logging/setLevel to a number",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":5}}"#),
            refused_param("Invalid log level: 5"),
        ),
        (
            "completion/complete without a ref",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{}}"#),
            refused_param("Invalid completion ref"),
        ),
        (
            "resources/subscribe without a uri",
            body(r#"{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{}}"#),
            refused_param("Missing or invalid parameter: uri"),
        ),
        ("params null", body(r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":null}"#), served()),
        // Messages answered with nothing.
        ("a response to nothing", body(r#"{"jsonrpc":"2.0","id":77,"result":{}}"#), accepted()),
        ("an error to nothing", body(r#"{"jsonrpc":"2.0","id":77,"error":{"code":1,"message":"x"}}"#), accepted()),
        (
            "a response with a result and an error",
            body(r#"{"jsonrpc":"2.0","id":77,"result":{},"error":{"code":1,"message":"x"}}"#),
            accepted(),
        ),
        ("an error that is not an object", body(r#"{"jsonrpc":"2.0","id":77,"error":"x"}"#), accepted()),
        ("a response without an id", body(r#"{"jsonrpc":"2.0","result":{}}"#), accepted()),
        ("an unknown notification", body(r#"{"jsonrpc":"2.0","method":"notifications/nope"}"#), accepted()),
        (
            "a notification whose params are a number",
            body(r#"{"jsonrpc":"2.0","method":"notifications/nope","params":3}"#),
            accepted(),
        ),
        (
            "a cancel of an unknown request",
            body(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}"#),
            accepted(),
        ),
        (
            "a cancel without a request id",
            body(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#),
            accepted(),
        ),
        (
            "notifications/initialized again",
            body(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            accepted(),
        ),
        // Batches, which 2025-03-26 allows.
        ("an empty batch on 2025-03-26", batch_body("[]"), refused(400, "Invalid Request: empty batch")),
        ("a batch of a number", batch_body("[1]"), batch(400, &[(Value::Null, Some(-32600))])),
        (
            "a batch of two numbers",
            batch_body("[1, 2]"),
            batch(400, &[(Value::Null, Some(-32600)), (Value::Null, Some(-32600))]),
        ),
        (
            "a batch of a batch on 2025-03-26",
            batch_body(r#"[[{"jsonrpc":"2.0","id":2,"method":"ping"}]]"#),
            batch(400, &[(Value::Null, Some(-32600))]),
        ),
        (
            "a batch with a bad id",
            batch_body(r#"[{"jsonrpc":"2.0","id":null,"method":"ping"}]"#),
            batch(400, &[(Value::Null, Some(-32600))]),
        ),
        (
            "a batch with a request and a number",
            batch_body(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},1]"#),
            batch(200, &[(json!(2), None), (Value::Null, Some(-32600))]),
        ),
        (
            "a batch with an unknown method",
            batch_body(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"nope"}]"#),
            batch(200, &[(json!(2), None), (json!(3), Some(-32601))]),
        ),
        (
            "a batch with initialize",
            batch_body(
                r#"[{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}]"#,
            ),
            batch(200, &[(json!(2), Some(-32600))]),
        ),
        ("a batch of notifications", batch_body(r#"[{"jsonrpc":"2.0","method":"notifications/nope"}]"#), accepted()),
        ("a batch of responses", batch_body(r#"[{"jsonrpc":"2.0","id":77,"result":{}}]"#), accepted()),
        ("a batch of 100 pings, the most a batch holds", batch_body(&pings(100)), batch(200, &answered(100))),
        (
            "a batch of 101 pings",
            batch_body(&pings(101)),
            refused(400, "Invalid Request: a batch may hold at most 100 messages; this one holds 101"),
        ),
    ];
    bench.run(rows).await;
    bench.stop().await;
}
