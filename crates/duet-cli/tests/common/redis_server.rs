//! A real `redis-server` for the tests of replicas that share a store: no persistence, on a
//! free loopback port, killed by its PID when the handle is dropped; and `redis-cli` to
//! read and write it as anyone with access to that Redis could.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's redis-server unless `REDIS_BIN` names another (as tests/interop does).
fn redis_bin() -> String {
    std::env::var("REDIS_BIN").unwrap_or_else(|_| "/usr/bin/redis-server".to_string())
}

pub struct RedisServer {
    child: Child,
    pub port: u16,
    /// Its working directory, removed with it.
    _dir: tempfile::TempDir,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        let dir = tempfile::tempdir().expect("a temp dir");
        // A port nothing listens on: bound and released.
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("bound").port();
        let child = Command::new(redis_bin())
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {} (scripts/python-interop.sh installs it): {e}", redis_bin()));
        let redis = RedisServer { child, port, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// What `redis-cli` prints for the command `args`, without its last line break.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli runs");
        assert!(out.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("redis-cli prints UTF-8");
        text.strip_suffix('\n').unwrap_or(&text).to_string()
    }

    /// The one key matching `pattern`.
    pub fn key(&self, pattern: &str) -> String {
        let keys = self.cli(&["--scan", "--pattern", pattern]);
        let keys: Vec<&str> = keys.lines().collect();
        assert_eq!(keys.len(), 1, "one key matching {pattern:?}: {keys:?}");
        keys[0].to_string()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
