//! What each worker keeps about its peers: their endpoints, the workers that said goodbye, and
//! which connections its callbacks touched.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use log::debug;
use parking_lot::Mutex;

use crate::core::protocol;
use crate::ucx::{self, Endpoint, Status, Worker};

/// Connection ids whose UCX state changed during progress, collected by callbacks and handled by
/// the progressing thread afterwards (outside the callbacks).
#[derive(Default)]
pub struct Touched {
    ids: Mutex<Vec<u32>>,
    any: AtomicBool,
}

impl Touched {
    pub fn push(&self, id: u32) {
        self.ids.lock().push(id);
        self.any.store(true, Ordering::Release);
    }

    /// Whether ids were pushed since the last `take_into` (cheap; no lock).
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Moves the collected ids into `into` (which should be empty; its capacity is reused).
    pub fn take_into(&self, into: &mut Vec<u32>) {
        let mut ids = self.ids.lock();
        self.any.store(false, Ordering::Release);
        if !ids.is_empty() {
            std::mem::swap(&mut *ids, into);
        }
    }
}

/// One UCX endpoint to a peer worker, shared by every connection between the two workers.
///
/// Sharing keeps endpoint lifetimes independent of connection lifetimes: UCX pairs the
/// endpoints two workers create towards each other, and closing one discards receives that wait
/// on its partner, so a connection must never close an endpoint another one may depend on. An
/// endpoint is closed once its peer worker is gone (it said goodbye, see [`Endpoints::goodbye`],
/// or failed) and no connection uses it any more.
pub struct PeerEndpoint {
    ep: OnceLock<Endpoint>,
    /// The transports of the endpoint's lanes, read once (see [`PeerEndpoint::transports`]).
    transports: OnceLock<Vec<String>>,
    failed: AtomicI32,
    /// The peer worker is gone: no new connection will use this endpoint.
    gone: AtomicBool,
    users: Mutex<Vec<u32>>,
    touched: Arc<Touched>,
    departures: Arc<Departures>,
}

impl PeerEndpoint {
    pub fn ep(&self) -> Option<&Endpoint> {
        self.ep.get()
    }

    /// The transports (`name/device`, e.g. `posix/memory`, `tcp/eth0`) of the endpoint's lanes,
    /// each once. UCX only prints them, as text: that takes tens of microseconds, so it is read
    /// for the first connection that asks, and every connection between the two workers shares
    /// the endpoint and so its lanes.
    pub fn transports(&self) -> &[String] {
        match self.ep.get() {
            Some(ep) => self.transports.get_or_init(|| transports_in(&ep.describe())),
            None => &[],
        }
    }

    /// The UCX status the endpoint failed with, if it did (the peer is gone).
    pub fn failure(&self) -> Option<i32> {
        match self.failed.load(Ordering::Acquire) {
            0 => None,
            code => Some(code),
        }
    }

    /// The endpoint failed: its connections are woken, the worker marked as having lost a peer.
    fn on_failure(&self, status: Status) {
        let code = if status.is_ok() { -1 } else { status.0 as i32 };
        self.failed.store(code, Ordering::Release);
        self.gone.store(true, Ordering::Release);
        for &id in self.users.lock().iter() {
            self.touched.push(id);
        }
        self.departures.lost.store(true, Ordering::Release);
        self.departures.any.store(true, Ordering::Release);
    }
}

/// The transport words of an endpoint's description, each once: lines such as
/// `lane[0]:  0:posix/memory.0 md[0] -> ...` give `posix/memory.0`.
fn transports_in(description: &str) -> Vec<String> {
    let mut unique: Vec<String> = Vec::new();
    let words = description
        .lines()
        .filter_map(|line| line.split_once("lane[").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_whitespace().nth(1))
        .map(|word| word.split_once(':').map_or(word, |(_, t)| t))
        .filter(|t| t.contains('/'));
    for word in words {
        if !unique.iter().any(|u| u == word) {
            unique.push(word.to_string());
        }
    }
    unique
}

/// Peer workers that went away, noted inside progress (by the goodbye handler and the error
/// handler) and handled after it by [`Endpoints::retire_departed`].
#[derive(Default)]
pub struct Departures {
    /// Digests of the worker addresses in goodbye messages.
    digests: Mutex<Vec<u64>>,
    any: AtomicBool,
    /// An endpoint failed: a peer worker went away without a goodbye.
    lost: AtomicBool,
}

impl Departures {
    /// Whether workers went away since the last [`Endpoints::retire_departed`] (no lock).
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Whether a peer worker ever went away without a goodbye.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// A goodbye message arrived (its header names the departing worker).
    pub(super) fn on_goodbye(&self, header: &[u8]) {
        match protocol::decode_goodbye(header) {
            Ok(digest) => {
                self.digests.lock().push(digest);
                self.any.store(true, Ordering::Release);
            }
            Err(e) => debug!("ignoring malformed goodbye message: {e}"),
        }
    }
}

/// How long a worker being destroyed waits for its goodbyes to leave.
const GOODBYE_WAIT: Duration = Duration::from_millis(10);

/// The endpoints of one worker, by peer worker address.
#[derive(Default)]
pub struct Endpoints {
    map: Mutex<HashMap<Vec<u8>, Arc<PeerEndpoint>>>,
    departures: Arc<Departures>,
}

impl Endpoints {
    /// The endpoint to the worker at `address`, created on first use; `user` is the connection
    /// id to wake if it fails.
    pub fn get(&self, worker: &Arc<Worker>, touched: &Arc<Touched>, address: &[u8], user: u32) -> ucx::Result<Arc<PeerEndpoint>> {
        let mut map = self.map.lock();
        if let Some(peer) = map.get(address) {
            if peer.failure().is_none() && !peer.gone.load(Ordering::Acquire) {
                peer.users.lock().push(user);
                return Ok(peer.clone());
            }
            map.remove(address);
        }
        let peer = Arc::new(PeerEndpoint {
            ep: OnceLock::new(),
            transports: OnceLock::new(),
            failed: AtomicI32::new(0),
            gone: AtomicBool::new(false),
            users: Mutex::new(vec![user]),
            touched: touched.clone(),
            departures: self.departures.clone(),
        });
        let weak: Weak<PeerEndpoint> = Arc::downgrade(&peer);
        let ep = Endpoint::connect(
            worker,
            address,
            Arc::new(move |status| {
                if let Some(peer) = weak.upgrade() {
                    peer.on_failure(status);
                }
            }),
        )?;
        let _ = peer.ep.set(ep);
        map.insert(address.to_vec(), peer.clone());
        Ok(peer)
    }

    /// `user` no longer uses `peer`; the endpoint goes once its peer is gone and nobody does.
    pub fn release(&self, peer: &Arc<PeerEndpoint>, user: u32) {
        let unused = {
            let mut users = peer.users.lock();
            users.retain(|&u| u != user);
            users.is_empty()
        };
        if unused && peer.gone.load(Ordering::Acquire) {
            self.map.lock().retain(|_, p| !Arc::ptr_eq(p, peer));
        }
    }

    /// Marks the endpoints to the workers noted in [`Departures`] gone and drops the gone ones no
    /// connection uses (closing them). Call outside progress.
    pub fn retire_departed(&self) {
        self.departures.any.store(false, Ordering::Release);
        let departed = std::mem::take(&mut *self.departures.digests.lock());
        let mut retired = Vec::new();
        {
            let mut map = self.map.lock();
            for (address, peer) in map.iter() {
                if departed.contains(&protocol::worker_digest(address)) {
                    peer.gone.store(true, Ordering::Release);
                }
            }
            map.retain(|_, peer| {
                let keep = !peer.gone.load(Ordering::Acquire) || !peer.users.lock().is_empty();
                if !keep {
                    retired.push(peer.clone());
                }
                keep
            });
        }
        if !retired.is_empty() {
            debug!("closing {} endpoints to departed workers", retired.len());
        }
        drop(retired);
    }

    /// The worker is about to be destroyed: tells every peer worker, so that they can close their
    /// endpoints to it, and waits briefly until the messages left.
    pub fn goodbye(&self, worker: &Worker) {
        let peers: Vec<Arc<PeerEndpoint>> = self.map.lock().values().cloned().collect();
        let header = protocol::encode_goodbye(worker.address());
        let lock = worker.lock();
        for peer in &peers {
            let Some(ep) = peer.ep().filter(|_| peer.failure().is_none()) else { continue };
            if let Err(e) = ep.am_send_owned(&lock, protocol::AM_GOODBYE, &header, &[]) {
                debug!("saying goodbye to a peer worker: {e}");
            }
        }
        // Small enough to go at once on every transport (a pending one waits for the peer).
        lock.progress();
        if !lock.detached_done_by(Instant::now() + GOODBYE_WAIT) {
            debug!("goodbye messages still in flight when the worker goes");
        }
    }

    pub fn departures(&self) -> &Arc<Departures> {
        &self.departures
    }

    /// How many peer workers this worker has endpoints to.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_are_read_from_the_lane_lines_of_a_description() {
        let description = "#\n# UCP endpoint\n#\n#               peer: <no debug data>\n\
            #                 lane[0]:  0:posix/memory.0 md[0]          -> md[0]/posix/sysdev[255] am am_bw#0\n\
            #                 lane[1]:  2:tcp/eth0.0 md[2]              -> md[2]/tcp/sysdev[255] rkey_ptr\n\
            #                 lane[2]:  0:posix/memory.0 md[0]          -> md[0]/posix/sysdev[255] tag\n\
            #         tag_send: 0..<egr/short>..8185..<egr/bcopy>..8192..<rndv>..(inf)\n";
        assert_eq!(transports_in(description), ["posix/memory.0", "tcp/eth0.0"]);
        assert!(transports_in("no lanes here").is_empty());
    }
}
