//! Round trips through the core without a JVM: `cargo run --release --example pingpong [size] [count]`.
//! Shows what the native path costs on its own (compare with `ucx_perftest -t tag_lat`).
//!
//! Across two processes or hosts: `pingpong size count --serve host:port` on one side and
//! `pingpong size count --to host:port` on the other.

use std::net::SocketAddr;
use std::thread;
use std::time::Instant;

use hadronio::config::{settings, Settings, Upgrade};
use hadronio::core::conn::Conn;
use hadronio::core::iov::Region;
use hadronio::core::listener::Listener;

fn region(buf: &mut [u8]) -> [Region<'_>; 1] {
    [Region::of(buf)]
}

fn exchange(conn: &Conn, buf: &mut [u8], first: bool) {
    let send = |buf: &mut [u8]| {
        let n = conn.write(&region(buf), true).expect("write");
        assert_eq!(n, buf.len());
    };
    if first {
        send(buf);
    }
    let mut got = 0;
    while got < buf.len() {
        got += conn.read(&region(&mut buf[got..]), true, None).expect("read");
    }
    if !first {
        send(buf);
    }
}

fn echo(server: std::sync::Arc<Conn>, size: usize, count: usize) {
    let mut buf = vec![0u8; size];
    for _ in 0..count {
        exchange(&server, &mut buf, false);
    }
}

fn main() {
    hadronio::initialize();
    // The example measures the UCX path wherever UCX goes, software RDMA devices included.
    Settings::install(Settings { upgrade: Upgrade { software_rdma: true, ..Settings::default().upgrade }, ..Settings::default() });
    let args: Vec<String> = std::env::args().collect();
    let size: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(64);
    let count: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let role = args.get(3).map(String::as_str);
    let peer: Option<SocketAddr> = args.get(4).map(|a| a.parse().expect("host:port"));
    let warmup = if role.is_some() { count / 10 } else { 10_000 };
    let client = match (role, peer) {
        (Some("--serve"), Some(addr)) => {
            let listener = Listener::open(settings()).expect("listener");
            listener.bind(&addr, 4).expect("bind");
            let server = listener.accept(true, None).expect("accept").expect("connection");
            echo(server, size, warmup + count);
            println!("answered {} round trips", warmup + count);
            return;
        }
        (Some("--to"), Some(addr)) => {
            let client = Conn::open(settings()).expect("conn");
            let start = Instant::now();
            while let Err(e) = client.connect(&addr, true, None) {
                assert!(start.elapsed().as_secs() < 60, "connect: {e:?}");
                thread::sleep(std::time::Duration::from_millis(200));
            }
            client
        }
        (None, _) => {
            let listener = Listener::open(settings()).expect("listener");
            listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 4).expect("bind");
            let addr = listener.local_addr().unwrap().unwrap();
            let client = Conn::open(settings()).expect("conn");
            client.connect(&addr, true, None).expect("connect");
            let server = listener.accept(true, None).expect("accept").expect("connection");
            thread::spawn(move || echo(server, size, warmup + count));
            client
        }
        _ => panic!("usage: pingpong [size] [count] [--serve host:port | --to host:port]"),
    };
    let mut buf = vec![0u8; size];
    for _ in 0..warmup {
        exchange(&client, &mut buf, true);
    }
    let start = Instant::now();
    for _ in 0..count {
        exchange(&client, &mut buf, true);
    }
    let elapsed = start.elapsed();
    println!("{size} B round trip: {:.2} us ({})", elapsed.as_secs_f64() * 1e6 / count as f64, client.describe().lines().next().unwrap_or(""));
}
