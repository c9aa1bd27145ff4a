//! A server out of file descriptors, in a process of its own (this test lowers the
//! process's open-files limit): `accept` failing with EMFILE must not spin, the connections
//! waiting meanwhile are refused with 503 rather than left hanging, and once descriptors
//! free up the server serves again.
//!
//! The clients live in the same process as the server, so they must not compete with it
//! for the last descriptors: their sockets are made first, then every descriptor left is
//! taken by open files, and only then do the sockets connect (which needs no descriptor).
//! From there on only the server opens or closes descriptors, and what it does is certain.

pub mod http_support;

use http_support::*;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count() as u64
}

/// CPU time this process has used, user and system.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct passed.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut usage), 0);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Connections waiting while the server is out of descriptors.
const WAITING: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_the_server_waits_refuses_and_recovers() {
    let ts = TestServer::start(config()).await;
    let health = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", ts.host());
    let sockets: Vec<TcpSocket> = (0..WAITING).map(|_| TcpSocket::new_v4().expect("a client socket")).collect();
    let limit = open_descriptors() + 40;
    let mut rlimit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut rlimit), 0);
        let lowered = libc::rlimit { rlim_cur: limit, rlim_max: rlimit.rlim_max };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lowered), 0);
    }

    // Every descriptor left goes to an open file, until the limit is reached.
    let mut files = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(file) => files.push(file),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
                break;
            }
        }
    }
    // The kernel completes each connection; the server has no descriptor to accept it with.
    let mut waiting = Vec::new();
    for socket in sockets {
        waiting.push(socket.connect(ts.addr).await.expect("connect"));
    }

    // Out of descriptors, the accept loop waits between attempts instead of spinning.
    let before = cpu_time();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let used = cpu_time() - before;
    assert!(used < Duration::from_millis(600), "{used:?} of CPU in 2 s while out of descriptors");

    // Each waiting connection was taken with the reserve and refused, not left hanging.
    for mut conn in waiting {
        let mut answer = [0u8; 512];
        let n = within(Duration::from_secs(10), "an answer, not a hang", conn.read(&mut answer)).await.expect("read");
        let answer = String::from_utf8_lossy(&answer[..n]);
        assert!(answer.starts_with("HTTP/1.1 503") && answer.contains("Too many connections"), "{answer}");
    }

    // Descriptors free again: the server serves.
    drop(files);
    // SAFETY: as above.
    unsafe { assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit), 0) };
    eventually("served again", || {
        let (addr, health) = (ts.addr, health.clone());
        async move {
            let Ok(mut conn) = TcpStream::connect(addr).await else { return false };
            conn.write_all(health.as_bytes()).await.is_ok() && read_response(&mut conn).await.status() == 200
        }
    })
    .await;
    ts.stop().await;
}
