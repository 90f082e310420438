//! The hubs of channels used in blocking mode. A hub with a UCX worker costs a few MiB (the
//! worker's shared-memory receive ring and segments), so such channels get one of their own only
//! while fewer than `hadronio.blockingWorkers` are open; after that a new channel joins the open
//! hub that serves the fewest channels, and the threads of its channels take turns progressing it
//! (see [`Hub::wait`]). A hub without UCX is an epoll set and an event fd: each channel keeps its own.

use std::sync::{Arc, Weak};

use log::debug;
use parking_lot::Mutex;

use super::hub::Hub;
use crate::config::Settings;

/// The open hubs with a UCX worker that blocking channels use.
static HUBS: Mutex<Vec<Weak<Hub>>> = Mutex::new(Vec::new());

/// The hub for a connection used in blocking mode that was not bound to one yet; `ucx`: whether
/// the connection may still go over UCX.
pub fn hub(settings: &Settings, ucx: bool) -> std::io::Result<Arc<Hub>> {
    if !ucx || !settings.upgrade.ucx {
        return Hub::new(settings, false);
    }
    let mut hubs = HUBS.lock();
    hubs.retain(|hub| hub.strong_count() > 0);
    if hubs.len() < settings.workers.blocking {
        let hub = Hub::new(settings, true)?;
        if hub.has_ucx() {
            hubs.push(Arc::downgrade(&hub));
        }
        return Ok(hub);
    }
    let fewest = hubs.iter().filter_map(Weak::upgrade).min_by_key(|hub| hub.connections());
    match fewest {
        Some(hub) => {
            debug!("{} blocking hubs open: a connection shares hub {} ({} connections)", hubs.len(), hub.serial, hub.connections());
            hub.shared_by_channels();
            Ok(hub)
        }
        None => Hub::new(settings, true),
    }
}
