//! The 2026-07-28 ladder over HTTP: the `_meta` envelope (its required keys and their
//! types), `MCP-Protocol-Version` against the envelope and the revisions served, `Mcp-Method`
//! and `Mcp-Name` against the body, methods 2026 does not have (404), the framing rules on
//! the 2026 path, and params the methods refuse.

use crate::*;
use duet::wire::key::LOG_LEVEL;

#[tokio::test]
async fn ladder() {
    let mut bench = Bench::start(config(), None).await;
    let (pv, cc) = (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY);
    let call = |method: &str, params: Value| bench.modern(method, params);
    let list = |params: Value| bench.modern_bare("tools/list", params);
    let meta = |meta: Value| list(json!({"_meta": meta}));
    let versioned = |v: &str| list(enveloped(json!({}))).set("mcp-protocol-version", v);
    let at = |v: &str| meta(json!({pv: v, cc: {}})).set("mcp-protocol-version", v);
    let echo = || call("tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    let read = || call("resources/read", json!({"uri": "test://info"}));
    let greet = || call("prompts/get", json!({"name": "greet", "arguments": {"name": "a"}}));
    let method = |name: &str| call(name, json!({}));
    // A message as it is, with the headers of a 2026 `tools/list`.
    let as_2026 = |message: Value| {
        let raw = bench.post(message.to_string()).header("mcp-protocol-version", MODERN);
        raw.header("mcp-method", "tools/list")
    };
    let listing =
        |id: Value, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
    let note = |params: Value| json!({"jsonrpc": "2.0", "method": "notifications/nope", "params": params});
    let invalid = |message: String| error(400, -32602, json!(ID), message);
    let missing = |keys: &str| invalid(format!("params._meta is missing the required envelope key(s): {keys}"));
    let not_a_string = || invalid(format!("{pv} must be a string"));
    let not_an_object = || invalid(format!("{cc} must be an object"));
    let level = |shown: &str| invalid(format!("Invalid log level: {shown}"));
    let unsupported = |v: &str| error(400, -32022, json!(ID), format!("Unsupported protocol version: {v}"));
    let mismatch = |message: String| error(400, -32020, json!(ID), message);
    let version_mismatch =
        || mismatch("MCP-Protocol-Version header does not match the request envelope's protocol version".into());
    let method_mismatch = || mismatch("Mcp-Method header does not match the request body's method".into());
    let name_mismatch =
        |param: &str| mismatch(format!("Mcp-Name header does not match the request body's '{param}' parameter"));
    let not_found = || error(404, -32601, json!(ID), "Method not found");
    let refused_param = |message: &str| error(200, -32602, json!(ID), message);
    let no_batches = || refused(400, "JSON-RPC batches are not supported by protocol version 2026-07-28");
    let both = format!("{pv}, {cc}");
    let arguments = json!({"order_id": "A1", "amount_cents": 500});
    let initialize =
        json!({"protocolVersion": MODERN, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let rows: Vec<Case> = vec![
        // The envelope.
        ("no _meta", list(json!({})), missing(&both)),
        ("params null", list(Value::Null), missing(&both)),
        ("_meta a number", meta(json!(5)), missing(&both)),
        ("_meta an array", meta(json!([pv, cc])), missing(&both)),
        ("_meta null", meta(Value::Null), missing(&both)),
        ("the keys misspelled", meta(json!({"io.modelcontextprotocol/protocolversion": MODERN, cc: {}})), missing(pv)),
        ("no protocol version", meta(json!({cc: {}})), missing(pv)),
        ("no client capabilities", meta(json!({pv: MODERN})), missing(cc)),
        ("a protocol version that is a number", meta(json!({pv: 20260728, cc: {}})), not_a_string()),
        ("a protocol version that is null", meta(json!({pv: null, cc: {}})), not_a_string()),
        ("a protocol version that is an object", meta(json!({pv: {"v": MODERN}, cc: {}})), not_a_string()),
        ("client capabilities that are an array", meta(json!({pv: MODERN, cc: []})), not_an_object()),
        ("client capabilities that are null", meta(json!({pv: MODERN, cc: null})), not_an_object()),
        ("client capabilities that are a string", meta(json!({pv: MODERN, cc: "all"})), not_an_object()),
        ("an unknown log level", meta(json!({pv: MODERN, cc: {}, LOG_LEVEL: "loud"})), level(r#""loud""#)),
        ("a log level in capitals", meta(json!({pv: MODERN, cc: {}, LOG_LEVEL: "INFO"})), level(r#""INFO""#)),
        ("a log level that is a number", meta(json!({pv: MODERN, cc: {}, LOG_LEVEL: 3})), level("3")),
        ("only the capabilities, and no header", meta(json!({cc: {}})).without("mcp-protocol-version"), missing(pv)),
        // MCP-Protocol-Version and the revisions served.
        ("a handshake-era version in both", at("2025-11-25"), unsupported("2025-11-25")),
        ("a future version in both", at("2099-01-01"), unsupported("2099-01-01")),
        ("an empty version in both", at(""), unsupported("")),
        ("no MCP-Protocol-Version", list(enveloped(json!({}))).without("mcp-protocol-version"), version_mismatch()),
        ("a handshake-era header", versioned("2025-11-25"), version_mismatch()),
        ("a future header", versioned("2099-01-01"), version_mismatch()),
        ("a list in the header", versioned("2026-07-28, 2026-07-28"), version_mismatch()),
        (
            "two MCP-Protocol-Versions",
            list(enveloped(json!({}))).header("mcp-protocol-version", MODERN),
            version_mismatch(),
        ),
        ("a future envelope", meta(json!({pv: "2099-01-01", cc: {}})), version_mismatch()),
        ("a handshake-era envelope", meta(json!({pv: "2025-11-25", cc: {}})), version_mismatch()),
        ("an envelope with a space", meta(json!({pv: "2026-07-28 ", cc: {}})), version_mismatch()),
        (
            "the envelope on the session",
            bench.in_session(listing(json!(ID), enveloped(json!({}))).to_string()),
            version_mismatch(),
        ),
        // Mcp-Method.
        ("no Mcp-Method", method("tools/list").without("mcp-method"), method_mismatch()),
        ("Mcp-Method in capitals", method("tools/list").set("mcp-method", "TOOLS/LIST"), method_mismatch()),
        ("Mcp-Method of another method", method("tools/list").set("mcp-method", "prompts/list"), method_mismatch()),
        ("Mcp-Method with a trailing slash", method("tools/list").set("mcp-method", "tools/list/"), method_mismatch()),
        (
            "Mcp-Method in base64",
            method("tools/list").set("mcp-method", "=?base64?dG9vbHMvbGlzdA==?="),
            method_mismatch(),
        ),
        ("a non-ASCII Mcp-Method", method("tools/list").set("mcp-method", b"tools/l\xefst"), method_mismatch()),
        ("two Mcp-Methods", method("tools/list").header("mcp-method", "tools/call"), method_mismatch()),
        ("Mcp-Method twice", method("tools/list").header("mcp-method", "tools/list"), method_mismatch()),
        // Mcp-Name.
        ("no Mcp-Name", echo().without("mcp-name"), name_mismatch("name")),
        ("Mcp-Name of another tool", echo().set("mcp-name", "stats"), name_mismatch("name")),
        ("Mcp-Name in capitals", echo().set("mcp-name", "ECHO"), name_mismatch("name")),
        ("an empty Mcp-Name", echo().set("mcp-name", ""), name_mismatch("name")),
        ("Mcp-Name of invalid base64", echo().set("mcp-name", "=?base64?***?="), name_mismatch("name")),
        ("Mcp-Name base64 without padding", echo().set("mcp-name", "=?base64?ZWNobw?="), name_mismatch("name")),
        ("Mcp-Name base64 of invalid UTF-8", echo().set("mcp-name", "=?base64?/w==?="), name_mismatch("name")),
        ("Mcp-Name with the markers in capitals", echo().set("mcp-name", "=?BASE64?ZWNobw==?="), name_mismatch("name")),
        ("a non-ASCII Mcp-Name", echo().set("mcp-name", b"\xe9cho"), name_mismatch("name")),
        ("two Mcp-Names", echo().header("mcp-name", "stats"), name_mismatch("name")),
        ("Mcp-Name twice", echo().header("mcp-name", "echo"), name_mismatch("name")),
        ("Mcp-Name in UTF-8", echo().set("mcp-name", "\u{e9}cho"), name_mismatch("name")),
        ("Mcp-Name of another prompt", greet().set("mcp-name", "nope"), name_mismatch("name")),
        ("no Mcp-Name for a prompt", greet().without("mcp-name"), name_mismatch("name")),
        ("Mcp-Name of another resource", read().set("mcp-name", "test://other"), name_mismatch("uri")),
        ("no Mcp-Name for a resource", read().without("mcp-name"), name_mismatch("uri")),
        ("Mcp-Name in base64", echo().set("mcp-name", "=?base64?ZWNobw==?="), served()),
        ("Mcp-Name on a method that names nothing", method("tools/list").header("mcp-name", "echo"), served()),
        // Methods 2026 does not have.
        ("an unknown method", method("no/such"), not_found()),
        ("an empty method", method(""), not_found()),
        ("ping", method("ping"), not_found()),
        ("initialize", call("initialize", initialize), not_found()),
        ("logging/setLevel", call("logging/setLevel", json!({"level": "info"})), not_found()),
        ("resources/subscribe", call("resources/subscribe", json!({"uri": "test://info"})), not_found()),
        ("resources/unsubscribe", call("resources/unsubscribe", json!({"uri": "test://info"})), not_found()),
        ("a notification sent as a request", method("notifications/initialized"), not_found()),
        // The framing rules on the 2026 path.
        (
            "jsonrpc 1.0",
            as_2026(json!({"jsonrpc": "1.0", "id": ID, "method": "tools/list", "params": enveloped(json!({}))})),
            error(400, -32600, json!(ID), "Invalid Request"),
        ),
        ("id null", as_2026(listing(Value::Null, enveloped(json!({})))), refused(400, "Invalid Request: bad id")),
        (
            "params an array",
            as_2026(listing(json!(ID), json!([1]))),
            error(400, -32602, json!(ID), "params must be an object"),
        ),
        ("not JSON", as_2026(json!({})).body("{nope"), error(400, -32700, Value::Null, "Parse error")),
        ("a batch", as_2026(json!([listing(json!(ID), enveloped(json!({})))])), no_batches()),
        (
            "a batch of envelopes and no headers",
            bench.post(json!([listing(json!(ID), enveloped(json!({})))]).to_string()),
            no_batches(),
        ),
        ("a notification", as_2026(note(enveloped(json!({})))), accepted()),
        ("a notification whose params are a number", as_2026(note(json!(3))), accepted()),
        ("a response", as_2026(json!({"jsonrpc": "2.0", "id": 5, "result": {}})), accepted()),
        // Params a method refuses.
        ("an unknown tool", call("tools/call", json!({"name": "nope"})), refused_param("Unknown tool: nope")),
        (
            "a tool name that is a number",
            call("tools/call", json!({"name": 5})),
            refused_param("Missing or invalid parameter: name"),
        ),
        (
            "an unknown resource",
            call("resources/read", json!({"uri": "test://nope"})),
            refused_param("Unknown resource: test://nope"),
        ),
        ("a cursor never issued", call("tools/list", json!({"cursor": "zzz"})), refused_param("Invalid cursor")),
        (
            "a request state never issued",
            call("tools/call", json!({"name": "refund_order", "arguments": arguments, "requestState": "garbage"})),
            refused_param("requestState is not a state this server issued (malformed)"),
        ),
        (
            "a listen without a filter",
            call("subscriptions/listen", json!({})),
            refused_param("subscriptions/listen requires a notifications filter"),
        ),
        (
            "a listen that cannot stream",
            call("subscriptions/listen", json!({"notifications": {}})).set("accept", "application/json"),
            refused(406, "subscriptions/listen requires Accept: text/event-stream"),
        ),
        ("well-formed", echo(), served()),
    ];
    bench.run(rows).await;
    bench.stop().await;
}
