//! Settings chosen by the Java side (system properties `hadronio.*`, validated there) and handed
//! over once through `Native.init`.

use std::sync::OnceLock;

use crate::core::auth::Secret;
use crate::rules::Rules;

use crate::core::protocol::{MAX_SLOTS, MAX_SLOT_LEN, MIN_SLOT_LEN};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Receive slots posted per connection (= credits granted to the peer).
    pub slots: u32,
    /// Bytes per receive slot (= largest UCX message the peer may send).
    pub slot_len: u32,
    /// Bytes a connection may hold in staging buffers before writes block.
    pub send_buffer: u32,
    /// Longest busy-poll before a waiting thread sleeps in epoll, in nanoseconds.
    pub spin_ns: u64,
    /// How long a closed connection keeps delivering already written data, in milliseconds.
    pub linger_ms: u64,
    /// How long an upgraded connection's control socket may hear nothing from the peer's kernel
    /// before the connection fails, in milliseconds (TCP keepalive and `TCP_USER_TIMEOUT`; 0:
    /// the kernel's defaults).
    pub liveness_ms: u64,
    /// Whether sockets are dual-stack IPv6 sockets.
    pub ipv6: bool,
    /// The UCX workers blocking channels use.
    pub workers: Workers,
    /// Which connections upgrade to UCX, and how.
    pub upgrade: Upgrade,
}

/// The UCX workers blocking channels use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workers {
    /// How many UCX workers of closed blocking channels are kept for reuse.
    pub spare: usize,
    /// How many UCX workers the channels used in blocking mode share at most (one each until
    /// there are that many; after that a new channel joins the one with the fewest channels).
    /// Unless set, twice the cores this process may use, 4 to 16 (see [`automatic_blocking_workers`]).
    pub blocking: usize,
}

/// Which connections upgrade to UCX, and how they agree on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upgrade {
    /// Whether to upgrade connections to UCX at all (false: plain TCP only).
    pub ucx: bool,
    /// Which connections may upgrade (`hadronio.rules`).
    pub rules: Rules,
    /// Whether a connection upgrades where UCX reaches the peer only through a software RDMA
    /// device (Soft-RoCE, soft-iWARP), which moves data more slowly than the kernel's TCP.
    pub software_rdma: bool,
    /// Shared secret both sides of an upgrade must prove (none: no authentication).
    pub secret: Option<Secret>,
    /// With a secret: how long a client holds its bytes waiting for a hadroNIO server's answer
    /// to its offer before it treats the server as a plain one, in milliseconds.
    pub offer_ms: u64,
    /// Without a secret: how long after connecting a client that wrote once starts the upgrade
    /// (its second write starts it at once), in milliseconds; 0: at once.
    pub delay_ms: u64,
    /// Bytes a channel in blocking mode whose UCX worker serves other channels too must have
    /// written or read before it upgrades to a peer on this host (0: it upgrades as others do).
    /// There each message over shared memory wakes the thread that progresses the worker and
    /// then the reader, where the kernel wakes the reader alone: that pays for bulk transfers,
    /// not for small messages.
    pub shared_bytes: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            slots: 32,
            slot_len: 16 * 1024,
            send_buffer: 256 * 1024,
            spin_ns: 50_000,
            linger_ms: 30_000,
            liveness_ms: 30_000,
            ipv6: crate::net::socket::ipv6_available(),
            workers: Workers { spare: 4, blocking: automatic_blocking_workers() },
            upgrade: Upgrade {
                ucx: true,
                rules: Rules::default(),
                software_rdma: false,
                secret: None,
                offer_ms: 200,
                delay_ms: 20,
                shared_bytes: 64 * 1024,
            },
        }
    }
}

/// The UCX workers blocking channels share unless `hadronio.blockingWorkers` is set: twice the
/// cores this process may use (its CPU affinity and quota), at least 4 and at most 16. The
/// threads that progress them run on those cores: with more workers than that, each worker's
/// channels are fewer but a thread is woken per message more often, and every worker costs
/// milliseconds to make and about 3 MiB of shared memory (with 16 on two cores, a
/// thread-per-connection server and its client opened 25 lanes within 0.1 s once their
/// connections upgraded, and one more echo on each of 2000 connections took 280-320 ms, against
/// 230-260 ms with 4).
pub fn automatic_blocking_workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (2 * cores).clamp(4, 16)
}

/// Order of the values in the `long[]` passed to `Native.init`.
/// KEEP IN SYNC: java/src/main/java/dev/hadronio/internal/Config.java
pub const SETTING_NAMES: [&str; 14] = [
    "slots",
    "slotLength",
    "sendBufferLength",
    "spinNanos",
    "lingerMillis",
    "ucx",
    "ipv6",
    "livenessMillis",
    "spareWorkers",
    "offerMillis",
    "blockingWorkers",
    "upgradeDelayMillis",
    "softwareRdma",
    "sharedUpgradeBytes",
];

static SETTINGS: OnceLock<Settings> = OnceLock::new();

impl Settings {
    /// Builds settings from the values in [`SETTING_NAMES`] order, checking every range.
    pub fn from_values(values: &[i64], secret: Option<&[u8]>, rules: &str) -> Result<Settings, String> {
        if values.len() != SETTING_NAMES.len() {
            return Err(format!("expected {} settings, got {}", SETTING_NAMES.len(), values.len()));
        }
        let range = |index: usize, min: i64, max: i64| -> Result<i64, String> {
            let value = values[index];
            if value < min || value > max {
                Err(format!("setting {} = {value} is outside {min}..={max}", SETTING_NAMES[index]))
            } else {
                Ok(value)
            }
        };
        Ok(Settings {
            slots: range(0, 2, MAX_SLOTS as i64)? as u32,
            slot_len: range(1, MIN_SLOT_LEN as i64, MAX_SLOT_LEN as i64)? as u32,
            send_buffer: range(2, 0, 1 << 30)? as u32,
            spin_ns: range(3, 0, 10_000_000)? as u64,
            linger_ms: range(4, 0, 3_600_000)? as u64,
            ipv6: range(6, 0, 1)? == 1,
            liveness_ms: range(7, 0, 86_400_000)? as u64,
            workers: Workers {
                spare: range(8, 0, 64)? as usize,
                blocking: match range(10, 0, 4096)? {
                    0 => automatic_blocking_workers(),
                    set => set as usize,
                },
            },
            upgrade: Upgrade {
                ucx: range(5, 0, 1)? == 1,
                rules: Rules::parse(rules).map_err(|e| format!("hadronio.rules='{rules}': {e}"))?,
                software_rdma: range(12, 0, 1)? == 1,
                secret: secret.and_then(Secret::new),
                offer_ms: range(9, 0, 60_000)? as u64,
                delay_ms: range(11, 0, 60_000)? as u64,
                shared_bytes: range(13, 0, 1 << 30)? as u64,
            },
        })
    }

    /// The settings that differ from the defaults, as `name=value` in the properties' names
    /// (the secret only as set).
    pub fn changes(&self) -> Vec<String> {
        let default = Settings::default();
        let mut changes = Vec::new();
        let mut note = |differs: bool, name: &str, value: String| {
            if differs {
                changes.push(format!("hadronio.{name}={value}"));
            }
        };
        note(self.slots != default.slots, "slots", self.slots.to_string());
        note(self.slot_len != default.slot_len, "slotLength", self.slot_len.to_string());
        note(self.send_buffer != default.send_buffer, "sendBufferLength", self.send_buffer.to_string());
        note(self.spin_ns != default.spin_ns, "spinMicros", (self.spin_ns / 1000).to_string());
        note(self.linger_ms != default.linger_ms, "lingerMillis", self.linger_ms.to_string());
        let (upgrade, usual) = (&self.upgrade, &default.upgrade);
        note(upgrade.ucx != usual.ucx, "transport", String::from(if upgrade.ucx { "ucx" } else { "tcp" }));
        note(self.liveness_ms != default.liveness_ms, "livenessMillis", self.liveness_ms.to_string());
        note(self.workers.spare != default.workers.spare, "spareWorkers", self.workers.spare.to_string());
        note(self.workers.blocking != default.workers.blocking, "blockingWorkers", self.workers.blocking.to_string());
        note(upgrade.secret.is_some(), "secret", String::from("(set)"));
        note(upgrade.offer_ms != usual.offer_ms, "offerMillis", upgrade.offer_ms.to_string());
        note(upgrade.delay_ms != usual.delay_ms, "upgradeDelayMillis", upgrade.delay_ms.to_string());
        note(upgrade.software_rdma != usual.software_rdma, "softwareRdma", upgrade.software_rdma.to_string());
        note(upgrade.shared_bytes != usual.shared_bytes, "sharedUpgradeBytes", upgrade.shared_bytes.to_string());
        changes
    }

    /// Installs the settings; only the first call has an effect.
    pub fn install(settings: Settings) -> bool {
        SETTINGS.set(settings).is_ok()
    }
}

/// The settings in effect.
pub fn settings() -> &'static Settings {
    SETTINGS.get_or_init(Settings::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_name_what_differs_from_the_defaults() {
        let mut values = [32, 16384, 262144, 50000, 30000, 1, 1, 30000, 4, 200, 0, 20, 0, 65536];
        assert!(Settings::from_values(&values, None, "").unwrap().changes().is_empty());
        values[0] = 8;
        values[5] = 0;
        values[11] = 0;
        values[12] = 1;
        values[13] = 0;
        let changes = Settings::from_values(&values, Some(b"x"), "").unwrap().changes();
        assert_eq!(
            changes,
            [
                "hadronio.slots=8",
                "hadronio.transport=tcp",
                "hadronio.secret=(set)",
                "hadronio.upgradeDelayMillis=0",
                "hadronio.softwareRdma=true",
                "hadronio.sharedUpgradeBytes=0"
            ]
        );
    }

    #[test]
    fn validates_ranges() {
        let good = [8, 16384, 262144, 50000, 1000, 1, 0, 4000, 4, 200, 2, 5, 1, 1024];
        let s = Settings::from_values(&good, Some(b"x"), "").unwrap();
        assert_eq!(s.slots, 8);
        assert_eq!(s.liveness_ms, 4000);
        assert_eq!(s.workers, Workers { spare: 4, blocking: 2 });
        assert_eq!(s.upgrade.delay_ms, 5);
        assert_eq!(s.upgrade.shared_bytes, 1024);
        assert!(s.upgrade.ucx && !s.ipv6 && s.upgrade.software_rdma);
        assert!(s.upgrade.secret.is_some());
        assert!(Settings::from_values(&good, Some(b""), "").unwrap().upgrade.secret.is_none());
        let mut bad = good;
        bad[0] = 1;
        assert!(Settings::from_values(&bad, None, "").unwrap_err().contains("slots = 1"));
        let mut bad = good;
        bad[1] = 10;
        assert!(Settings::from_values(&bad, None, "").unwrap_err().contains("slotLength"));
        let mut bad = good;
        bad[7] = -1;
        assert!(Settings::from_values(&bad, None, "").unwrap_err().contains("livenessMillis = -1"));
        let mut bad = good;
        bad[8] = 65;
        assert!(Settings::from_values(&bad, None, "").unwrap_err().contains("spareWorkers = 65"));
        let mut bad = good;
        bad[10] = 4097;
        assert!(Settings::from_values(&bad, None, "").unwrap_err().contains("blockingWorkers = 4097"));
        let mut bad = good;
        bad[11] = 60_001;
        assert!(Settings::from_values(&bad, None, "").unwrap_err().contains("upgradeDelayMillis = 60001"));
        let mut bad = good;
        bad[12] = 2;
        assert!(Settings::from_values(&bad, None, "").unwrap_err().contains("softwareRdma = 2"));
        let mut bad = good;
        bad[13] = -1;
        assert!(Settings::from_values(&bad, None, "").unwrap_err().contains("sharedUpgradeBytes = -1"));
        assert!(Settings::from_values(&good[..3], None, "").is_err());
        let mut automatic = good;
        automatic[10] = 0;
        let workers = Settings::from_values(&automatic, None, "").unwrap().workers.blocking;
        assert_eq!(workers, automatic_blocking_workers());
        let cores = std::thread::available_parallelism().unwrap().get();
        assert!((4..=16).contains(&workers) && workers >= (2 * cores).min(16), "{workers} workers for {cores} cores");
        let error = Settings::from_values(&good, None, "udp *").unwrap_err();
        assert!(error.contains("hadronio.rules='udp *'") && error.contains("'udp' is not 'ucx' or 'tcp'"), "{error}");
    }
}
