//! A server out of file descriptors, in a process of its own (this test lowers the
//! process's open-files limit): `accept` failing with EMFILE must not spin, the connections
//! waiting meanwhile are refused with 503 rather than left hanging, and once descriptors
//! free up the server serves again.

pub mod http_support;

use http_support::*;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_the_server_waits_refuses_and_recovers() {
    let ts = TestServer::start(config()).await;
    let health = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", ts.host());
    // Room for about 40 connections: each takes a descriptor on both ends, in this process.
    let limit = open_descriptors() + 80;
    let mut rlimit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut rlimit), 0);
        let lowered = libc::rlimit { rlim_cur: limit, rlim_max: rlimit.rlim_max };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lowered), 0);
    }

    // Connect until this process has no descriptor left for another client socket.
    let spare = std::fs::File::open("/dev/null").expect("a spare descriptor");
    let mut clients = Vec::new();
    while clients.len() < 400 {
        match TcpStream::connect(ts.addr).await {
            Ok(client) => clients.push(client),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
                break;
            }
        }
    }
    assert!(clients.len() < 400, "the limit was reached");
    // One more client on the spare descriptor: the kernel completes its connection, and
    // the server has no descriptor to accept it with.
    drop(spare);
    let mut waiting = TcpStream::connect(ts.addr).await.expect("connect on the spare descriptor");

    // Out of descriptors, the accept loop waits between attempts instead of spinning.
    let before = cpu_time();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let used = cpu_time() - before;
    assert!(used < Duration::from_millis(600), "{used:?} of CPU in 2 s while out of descriptors");

    // The waiting connection was taken with the reserve and refused, not left hanging.
    let mut answer = [0u8; 512];
    let read = tokio::time::timeout(Duration::from_secs(5), waiting.read(&mut answer)).await;
    let n = read.expect("an answer, not a hang").expect("read");
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 503") && answer.contains("Too many connections"), "{answer}");
    drop(waiting);

    // Descriptors free again: the server serves.
    drop(clients);
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
