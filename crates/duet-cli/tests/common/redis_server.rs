//! A real `redis-server` for the tests of replicas that share a store: no persistence, on a
//! free loopback port (plain, or TLS only), killed by its PID when the handle is dropped;
//! and `redis-cli` to read, write and listen to it as anyone with access to that Redis could.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Debian's redis-server unless `REDIS_BIN` names another (as tests/interop does).
fn redis_bin() -> String {
    std::env::var("REDIS_BIN").unwrap_or_else(|_| "/usr/bin/redis-server".to_string())
}

/// The files of a TLS Redis: its CA's certificate, its own certificate and key.
pub(crate) struct Tls {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub(crate) struct RedisServer {
    child: Child,
    pub port: u16,
    tls: Option<Tls>,
    /// Its working directory, removed with it.
    _dir: tempfile::TempDir,
}

impl RedisServer {
    pub(crate) fn start() -> RedisServer {
        RedisServer::start_with(None)
    }

    /// A Redis that speaks TLS only (`rediss://`), with `tls`'s certificate.
    pub(crate) fn start_tls(tls: Tls) -> RedisServer {
        RedisServer::start_with(Some(tls))
    }

    fn start_with(tls: Option<Tls>) -> RedisServer {
        let dir = tempfile::tempdir().expect("a temp dir");
        // A port nothing listens on: bound and released.
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("bound").port();
        let mut command = Command::new(redis_bin());
        command.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]).arg("--dir").arg(dir.path());
        match &tls {
            None => command.args(["--port", &port.to_string()]),
            Some(tls) => command
                .args(["--port", "0", "--tls-port", &port.to_string(), "--tls-auth-clients", "no"])
                .arg("--tls-cert-file")
                .arg(&tls.cert)
                .arg("--tls-key-file")
                .arg(&tls.key)
                .arg("--tls-ca-cert-file")
                .arg(&tls.ca),
        };
        let child =
            command.stdin(Stdio::null()).stdout(Stdio::null()).spawn().unwrap_or_else(|e| {
                panic!("cannot start {} (scripts/python-interop.sh installs it): {e}", redis_bin())
            });
        let redis = RedisServer { child, port, tls, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }

    pub(crate) fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}/0", self.port)
    }

    /// `redis-cli` pointed at this server.
    fn redis_cli(&self) -> Command {
        let mut command = Command::new("redis-cli");
        command.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        if let Some(tls) = &self.tls {
            command.arg("--tls").arg("--cacert").arg(&tls.ca);
        }
        command
    }

    /// What `redis-cli` prints for the command `args`, without its last line break.
    pub(crate) fn cli(&self, args: &[&str]) -> String {
        let out = self.redis_cli().args(args).output().expect("redis-cli runs");
        assert!(out.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("redis-cli prints UTF-8");
        text.strip_suffix('\n').unwrap_or(&text).to_string()
    }

    /// The one key matching `pattern`.
    pub(crate) fn key(&self, pattern: &str) -> String {
        let keys = self.cli(&["--scan", "--pattern", pattern]);
        let keys: Vec<&str> = keys.lines().collect();
        assert_eq!(keys.len(), 1, "one key matching {pattern:?}: {keys:?}");
        keys[0].to_string()
    }

    /// Listens to `channel` as a plain Redis client; returns once subscribed.
    pub(crate) fn subscribe(&self, channel: &str) -> Subscription {
        let mut child = self
            .redis_cli()
            .args(["--raw", "SUBSCRIBE", channel])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("redis-cli runs");
        let mut lines = BufReader::new(child.stdout.take().expect("its output")).lines().map_while(Result::ok);
        // `subscribe`, the channel, the count of channels.
        assert_eq!(lines.by_ref().take(3).count(), 3, "redis-cli subscribed to {channel}");
        let (sender, messages) = mpsc::channel();
        std::thread::spawn(move || {
            // Each message is three lines: `message`, the channel, the payload.
            while let (Some(_), Some(_), Some(payload)) = (lines.next(), lines.next(), lines.next()) {
                if sender.send(payload).is_err() {
                    return;
                }
            }
        });
        Subscription { child, messages }
    }
}

/// `redis-cli SUBSCRIBE` to one channel: the messages published on it, as they come.
pub(crate) struct Subscription {
    child: Child,
    messages: mpsc::Receiver<String>,
}

impl Subscription {
    /// The first message received within `within` that `wanted` picks.
    pub(crate) fn find(&self, within: Duration, wanted: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.messages.recv_timeout(left) {
                Ok(message) if wanted(&message) => return Some(message),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CA made now and a certificate it signed for 127.0.0.1, in `dir` (with `openssl`).
pub(crate) fn issue_certificates(dir: &Path) -> Tls {
    let path = |name: &str| dir.join(name).to_str().expect("a UTF-8 path").to_string();
    let (ca, ca_key, cert, key, request, extensions) =
        (path("ca.pem"), path("ca.key"), path("redis.pem"), path("redis.key"), path("redis.csr"), path("san.cnf"));
    std::fs::write(&extensions, "subjectAltName=IP:127.0.0.1\n").expect("write the extensions");
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).output().expect("openssl runs");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    // A new P-256 key, unencrypted, written to the path that follows.
    let new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout"];
    openssl(
        &[&["req", "-x509"], &new_key[..], &[&ca_key, "-days", "1", "-subj", "/CN=duet test CA", "-out", &ca]].concat(),
    );
    openssl(&[&["req"], &new_key[..], &[&key, "-subj", "/CN=127.0.0.1", "-out", &request]].concat());
    openssl(&[
        "x509",
        "-req",
        "-days",
        "1",
        "-CAcreateserial",
        "-in",
        &request,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-extfile",
        &extensions,
        "-out",
        &cert,
    ]);
    Tls { ca: ca.into(), cert: cert.into(), key: key.into() }
}
