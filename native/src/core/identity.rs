//! Where this process runs, as its HELLO names it, and where a peer runs relative to it: what
//! decides whether UCX's shared memory can reach the peer and which UCX worker serves it.

use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;

use log::debug;

use super::protocol::{worker_digest, Identity};

/// This process's identity, drawn once (by the first caller: every connection of a process has
/// the same slot length, which sizes its shared-memory segments).
pub fn ours(slot_len: u32) -> Identity {
    static OURS: OnceLock<Identity> = OnceLock::new();
    *OURS.get_or_init(|| {
        let host = match std::fs::read("/proc/sys/kernel/random/boot_id") {
            Ok(id) => worker_digest(id.trim_ascii()),
            Err(e) => {
                debug!("no boot id ({e}): every peer counts as on another host");
                0
            }
        };
        let random = super::auth::challenge();
        let mut process = [0u8; 8];
        process.copy_from_slice(&random[..8]);
        Identity { host, namespaces: namespaces(slot_len), process: u64::from_ne_bytes(process) }
    })
}

/// A digest of the network, IPC, mount and PID namespaces of this process (their inode numbers
/// under `/proc/self/ns`) and of how its UCX shared memory is laid out; 0 if the namespaces
/// cannot be read. UCX's shared memory between two processes of one host needs the same IPC and
/// mount namespaces (its segments), the same network namespace (its wake-up signals travel over
/// abstract UNIX sockets), the same PID namespace (its cross-memory copies name processes by pid)
/// and the same segment and FIFO sizes (a sender writes into the receiver's segments as its own
/// settings size them: `hadronio.slotLength` and UCX's shared-memory settings must agree).
fn namespaces(slot_len: u32) -> u64 {
    let mut bytes = crate::ucx::shared_memory_layout(slot_len as usize).into_bytes();
    for name in ["net", "ipc", "mnt", "pid"] {
        match std::fs::metadata(format!("/proc/self/ns/{name}")) {
            Ok(meta) => {
                bytes.extend_from_slice(name.as_bytes());
                bytes.extend_from_slice(&meta.ino().to_be_bytes());
                bytes.extend_from_slice(&meta.dev().to_be_bytes());
            }
            Err(e) => {
                debug!("cannot read the {name} namespace ({e}): shared memory is not used with other processes");
                return 0;
            }
        }
    }
    worker_digest(&bytes)
}

/// Where a peer runs relative to this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locality {
    /// Another host (or one that cannot tell): UCX's network transports.
    Remote,
    /// This process.
    ThisProcess,
    /// Another process on this host in the same namespaces: shared memory, with a worker of its
    /// own on selectors (a lane of its own, see `lanes.rs`).
    Local(u64),
    /// Another process on this host in other namespaces (a container) or with another layout of
    /// UCX's shared memory: shared memory does not reach it, so it is served by a worker of a UCX
    /// context without shared-memory transports.
    Isolated,
}

pub fn locality(ours: &Identity, peer: &Identity) -> Locality {
    if ours.host == 0 || peer.host != ours.host {
        Locality::Remote
    } else if ours.namespaces == 0 || peer.namespaces != ours.namespaces {
        Locality::Isolated
    } else if peer.process == ours.process {
        Locality::ThisProcess
    } else {
        Locality::Local(peer.process)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localities() {
        let me = ours(16384);
        assert_eq!(ours(16384), me, "drawn once per process");
        let peer = |host, namespaces, process| Identity { host, namespaces, process };
        if me.host != 0 && me.namespaces != 0 {
            assert_eq!(locality(&me, &peer(me.host, me.namespaces, me.process ^ 1)), Locality::Local(me.process ^ 1));
            assert_eq!(locality(&me, &peer(me.host, me.namespaces, me.process)), Locality::ThisProcess);
            assert_eq!(locality(&me, &peer(me.host, me.namespaces ^ 1, me.process ^ 1)), Locality::Isolated);
        }
        assert_eq!(locality(&me, &peer(me.host.wrapping_add(1), me.namespaces, me.process ^ 1)), Locality::Remote);
        assert_eq!(locality(&me, &peer(0, me.namespaces, me.process ^ 1)), Locality::Remote);
    }
}
