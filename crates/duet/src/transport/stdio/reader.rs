//! Reads stdin on a thread of its own (a blocking read works the same on every platform),
//! one message per line. A line longer than the limit is never held whole: its bytes are
//! counted and dropped up to its newline, and it arrives as [`Line::TooLong`]. The channel
//! to the session is bounded, so a session that stops taking lines stops the reading.

use std::io::{self, BufRead, BufReader, Read};
use tokio::sync::mpsc;

/// Lines read ahead of the session.
const READ_AHEAD: usize = 64;

#[derive(Debug, PartialEq)]
pub(super) enum Line {
    /// A line within the limit, its newline included when it had one.
    Text(Vec<u8>),
    /// A line of this many bytes (its newline excluded), over the limit.
    TooLong(usize),
}

/// Starts the reading thread; the receiver ends at end of input.
pub(super) fn spawn_reader<R: Read + Send + 'static>(input: R, max_bytes: usize) -> mpsc::Receiver<Line> {
    let (tx, rx) = mpsc::channel(READ_AHEAD);
    std::thread::Builder::new()
        .name("duet-stdin".into())
        .spawn(move || {
            let mut reader = BufReader::new(input);
            loop {
                let line = match read_line(&mut reader, max_bytes) {
                    Ok(Some(line)) => line,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!("reading stdin failed: {e}");
                        break;
                    }
                };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        })
        .ok();
    rx
}

/// The next line, holding at most `max_bytes` of it; `None` at end of input.
fn read_line(reader: &mut impl BufRead, max_bytes: usize) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut seen = 0usize;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((seen > 0).then(|| finished(line, seen, max_bytes)));
        }
        let (piece, ends) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..=at], true),
            None => (buf, false),
        };
        let taken = piece.len();
        let text = if ends { taken - 1 } else { taken };
        if seen + text <= max_bytes {
            line.extend_from_slice(piece);
        } else {
            line = Vec::new();
        }
        seen += text;
        reader.consume(taken);
        if ends {
            return Ok(Some(finished(line, seen, max_bytes)));
        }
    }
}

fn finished(line: Vec<u8>, seen: usize, max_bytes: usize) -> Line {
    if seen > max_bytes { Line::TooLong(seen) } else { Line::Text(line) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its input in the given pieces, one per read.
    struct Pieces(std::collections::VecDeque<&'static [u8]>);

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some(piece) = self.0.pop_front() else { return Ok(0) };
            buf[..piece.len()].copy_from_slice(piece);
            Ok(piece.len())
        }
    }

    async fn lines(pieces: &[&'static [u8]], max_bytes: usize) -> Vec<Line> {
        let mut rx = spawn_reader(Pieces(pieces.iter().copied().collect()), max_bytes);
        let mut got = Vec::new();
        while let Some(line) = rx.recv().await {
            got.push(line);
        }
        got
    }

    fn text(s: &str) -> Line {
        Line::Text(s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn lines_arrive_whole_and_in_order_however_they_are_read() {
        let pieces: [&[u8]; 5] =
            [b"{\"a\":1}\n{\"b\"", b":2}\n{\"c\":3}\n{\"d\":4}\n", b"{\"e\"", b":5}\n", b"{\"f\":6}"];
        let want = ["{\"a\":1}\n", "{\"b\":2}\n", "{\"c\":3}\n", "{\"d\":4}\n", "{\"e\":5}\n", "{\"f\":6}"];
        assert_eq!(lines(&pieces, 1024).await, want.map(text));
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_counted_not_kept() {
        let pieces: [&[u8]; 4] = [b"12345\n1234", b"56789", b"0\nabc\n", b"toolongatend"];
        let got = lines(&pieces, 5).await;
        assert_eq!(got, [text("12345\n"), Line::TooLong(10), text("abc\n"), Line::TooLong(12)]);
    }
}
