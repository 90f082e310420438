//! Round trips through selectors without a JVM: `cargo run --release --example selping [size] [count]`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hadronio::config::settings;
use hadronio::core::conn::Conn;
use hadronio::core::iov::Region;
use hadronio::core::listener::Listener;
use hadronio::core::readiness::OP_READ;
use hadronio::core::selector::{Selector, Target};

fn region(buf: &mut [u8]) -> [Region<'_>; 1] {
    [Region::of(buf)]
}

fn side(conn: Arc<Conn>, size: usize, rounds: usize, first: bool) -> Duration {
    let selector = Selector::open(settings()).expect("selector");
    let _key = selector.register(Target::Conn(conn.clone()), 0, OP_READ).expect("register");
    let mut buf = vec![0u8; size];
    let mut out = [0i32; 8];
    let mut start = Instant::now();
    let mut sleeps = 0u64;
    for round in 0..rounds {
        if round == rounds / 10 {
            start = Instant::now();
        }
        if first {
            assert_eq!(conn.write(&region(&mut buf), false).unwrap(), size);
        }
        let mut got = 0;
        while got < size {
            let t = Instant::now();
            selector.select(None, &mut out);
            if t.elapsed() > Duration::from_micros(30) {
                sleeps += 1;
            }
            got += conn.read(&region(&mut buf[got..]), false, None).unwrap();
        }
        if !first {
            assert_eq!(conn.write(&region(&mut buf), false).unwrap(), size);
        }
    }
    if first {
        println!("slow selects: {sleeps}");
    }
    start.elapsed() / (rounds - rounds / 10) as u32
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(64);
    let count: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let listener = Listener::open(settings()).expect("listener");
    listener.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap(), 4).expect("bind");
    let addr = listener.local_addr().unwrap().unwrap();
    let client = Conn::open(settings()).expect("conn");
    client.connect(&addr, false, None).expect("connect");
    let server = listener.accept(true, None).expect("accept").expect("connection");
    while !client.finish_connect(true).unwrap() {}
    let echo = thread::spawn(move || side(server, size, count, false));
    let rtt = side(client, size, count, true);
    echo.join().unwrap();
    println!("{size} B selector round trip: {:.2} us", rtt.as_secs_f64() * 1e6);
}
