//! The span exporter: a batch of encoded spans (`crate::encode`) posted to the collector
//! over OTLP/HTTP in protobuf, from the processor's own thread (`crate::processor`).
//!
//! Why it exists rather than `opentelemetry-otlp`'s: that one builds prost's structs for
//! every span before encoding them, which cost more than the rest of an exported span
//! together (`docs/operations.md`). This one posts bytes already written and keeps what that
//! exporter did that a user can see: the OTLP/HTTP retries (network errors, 429, 502, 503,
//! 504, with backoff, within [`EXPORT_TIMEOUT`]), the headers of
//! `OTEL_EXPORTER_OTLP_TRACES_HEADERS` or `OTEL_EXPORTER_OTLP_HEADERS`, a warning when the
//! collector rejects some spans. A batch that cannot be sent is dropped and the error
//! returned, which the processor logs.

use crate::encode::{EncodedResource, EncodedSpans, export_request};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use opentelemetry_sdk::Resource;
use prost::Message as _;
use prost::bytes::Bytes;
use reqwest::StatusCode;
use reqwest::blocking::Client;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use std::time::{Duration, Instant};

/// How long one export may take, its retries included, before the batch is given up.
pub(crate) const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Retries of a batch the collector could not take, the first after [`FIRST_BACKOFF`] and
/// each later one after twice the wait before it: the OTLP exporter's own policy.
const RETRIES: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub(crate) struct OtlpHttpExporter {
    client: Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    resource: EncodedResource,
}

impl OtlpHttpExporter {
    /// An exporter posting to `endpoint` (an http:// or https:// URL, checked). Its HTTP
    /// client has a thread and runtime of its own, so this is called outside any runtime.
    pub(crate) fn new(endpoint: &str) -> anyhow::Result<OtlpHttpExporter> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-protobuf"));
        headers.insert(USER_AGENT, HeaderValue::from_static(concat!("duet/", env!("CARGO_PKG_VERSION"))));
        let given =
            std::env::var("OTEL_EXPORTER_OTLP_TRACES_HEADERS").or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_HEADERS"));
        if let Ok(given) = given {
            headers.extend(extra_headers(&given));
        }
        Ok(OtlpHttpExporter {
            client: Client::builder().build()?,
            endpoint: endpoint.parse()?,
            headers,
            resource: EncodedResource::default(),
        })
    }

    /// Posts the spans of `batch`'s buffers (none: nothing to do).
    pub(crate) fn export(&self, batch: &[EncodedSpans]) -> Result<(), String> {
        if batch.iter().all(EncodedSpans::is_empty) {
            return Ok(());
        }
        // Allocated once: the request's length is counted before it is written.
        let mut body = Vec::new();
        export_request(&mut body, &self.resource, batch);
        let answer = self.post(body.into())?;
        if let Some(rejected) = answer.and_then(|a| ExportTraceServiceResponse::decode(a).ok()?.partial_success)
            && (rejected.rejected_spans > 0 || !rejected.error_message.is_empty())
        {
            tracing::warn!(
                rejected_spans = rejected.rejected_spans,
                message = rejected.error_message,
                "the collector rejected part of an export"
            );
        }
        Ok(())
    }

    /// The resource every export names, as the provider has it.
    pub(crate) fn set_resource(&mut self, resource: &Resource) {
        self.resource = EncodedResource::new(resource);
    }

    /// Posts `body`, again while the collector may take it later and time is left.
    fn post(&self, body: Bytes) -> Result<Option<Bytes>, String> {
        let deadline = Instant::now() + EXPORT_TIMEOUT;
        let mut backoff = FIRST_BACKOFF;
        let mut retries = 0;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let sent = self
                .client
                .post(self.endpoint.clone())
                .headers(self.headers.clone())
                .timeout(remaining)
                .body(body.clone())
                .send();
            let (error, retry) = match sent {
                Ok(response) if response.status().is_success() => return Ok(response.bytes().ok()),
                Ok(response) => {
                    let status = response.status();
                    (format!("the collector answered {status}"), retried(status))
                }
                // Without the URL, which may hold credentials.
                Err(e) => (format!("the collector could not be reached: {}", e.without_url()), true),
            };
            if !retry || retries == RETRIES || backoff >= deadline.saturating_duration_since(Instant::now()) {
                return Err(error);
            }
            std::thread::sleep(backoff);
            backoff *= 2;
            retries += 1;
        }
    }
}

/// Whether an export the collector answered with `status` may be sent again, as OTLP/HTTP
/// says: when it is throttled or unavailable.
fn retried(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 502 | 503 | 504)
}

/// The headers of `OTEL_EXPORTER_OTLP_HEADERS`'s syntax: `key=value` pairs separated by
/// commas, each value percent-decoded; a pair without a value or that is not a valid header
/// is left out.
fn extra_headers(given: &str) -> impl Iterator<Item = (HeaderName, HeaderValue)> {
    given.split(',').filter_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
        let header = (HeaderName::try_from(key.trim()).ok()?, HeaderValue::try_from(value.as_ref()).ok()?);
        (!value.is_empty()).then_some(header)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{OtlpHttpExporter, extra_headers};
    use crate::encode::tests::{batch, request_span, scope};
    use crate::encode::{EncodedResource, export_request};
    use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    /// A request as the collector received it: its head and its body.
    pub(crate) type Received = (String, Vec<u8>);

    /// A collector on loopback answering each request, on a connection of its own, with the
    /// next of `statuses`; it returns each request, once each status is used or no request
    /// came for ten seconds (so a test sent fewer exports than it expects fails, not hangs).
    pub(crate) fn collector(statuses: &'static [&'static str]) -> (String, std::thread::JoinHandle<Vec<Received>>) {
        holding_collector(statuses, || {})
    }

    /// [`collector`], calling `first` after the first request came and before answering it.
    pub(crate) fn holding_collector(
        statuses: &'static [&'static str],
        first: impl FnOnce() + Send + 'static,
    ) -> (String, std::thread::JoinHandle<Vec<Received>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let url = format!("http://{}/v1/traces", listener.local_addr().expect("address"));
        let answers = std::thread::spawn(move || {
            let mut received = Vec::new();
            let mut first = Some(first);
            for status in statuses {
                let Some(stream) = next_connection(&listener) else { break };
                let mut reader = BufReader::new(stream);
                let mut head = String::new();
                while !head.ends_with("\r\n\r\n") {
                    reader.read_line(&mut head).expect("head");
                }
                let length = head
                    .lines()
                    .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length: ")?.parse().ok())
                    .expect("content-length");
                let mut body = vec![0; length];
                reader.read_exact(&mut body).expect("body");
                if let Some(first) = first.take() {
                    first();
                }
                let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                reader.get_mut().write_all(answer.as_bytes()).expect("answer");
                received.push((head, body));
            }
            received
        });
        (url, answers)
    }

    /// The next connection to `listener` (non-blocking), or none within ten seconds.
    fn next_connection(listener: &TcpListener) -> Option<TcpStream> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).expect("blocking");
                    return Some(stream);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return None,
            }
        }
    }

    #[test]
    fn a_batch_is_posted_as_protobuf_and_sent_again_while_the_collector_is_unavailable() {
        let (url, collector) = collector(&["503 Service Unavailable", "200 OK", "400 Bad Request"]);
        let exporter = OtlpHttpExporter::new(&url).expect("exporter");
        let spans = [batch(&[request_span(1, scope("duet", None))]), batch(&[request_span(2, scope("duet", None))])];
        let mut expected = Vec::new();
        export_request(&mut expected, &EncodedResource::default(), &spans);
        exporter.export(&spans).expect("sent on the second try");
        // A refusal that is not "later" is final: the batch is dropped, the error returned.
        let refused = exporter.export(&spans).expect_err("refused");
        assert!(refused.to_string().contains("400"), "{refused}");
        let received = collector.join().expect("collector");
        assert_eq!(received.len(), 3);
        for (head, body) in received {
            assert!(head.starts_with("POST /v1/traces HTTP/1.1\r\n"), "{head}");
            assert!(head.to_ascii_lowercase().contains("content-type: application/x-protobuf\r\n"), "{head}");
            assert_eq!(body, expected);
        }
    }

    #[test]
    fn extra_headers_are_comma_separated_and_percent_decoded() {
        let headers: Vec<_> =
            extra_headers("api-key=a%20b%2Cc, x-team = core ,bad header=1,novalue,empty=,=x").collect();
        let headers: Vec<_> = headers.iter().map(|(k, v)| (k.as_str(), v.to_str().expect("ascii"))).collect();
        assert_eq!(headers, [("api-key", "a b,c"), ("x-team", "core")]);
    }
}
