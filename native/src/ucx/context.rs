//! The UCX context: its configuration (shared-memory sizes, transports, a C locale while UCX
//! parses numbers) and the `ucp_context_h` every worker shares.

use std::ffi::CString;
use std::os::raw::c_char;
use std::ptr;
use std::sync::Arc;

use std::time::Duration;

use log::{debug, warn};
use ucx1_sys as sys;

use super::{check, devices, Status, BUILT_MAJOR, BUILT_MINOR};

/// Switches the calling thread to the C numeric locale while alive, so that UCX parses numbers in
/// its configuration the same way whatever locale the JVM runs with.
struct CNumericLocale {
    locale: libc::locale_t,
    previous: libc::locale_t,
}

impl CNumericLocale {
    fn enter() -> Option<Self> {
        let name = b"C\0";
        // SAFETY: `name` is NUL-terminated; a null base locale asks for a fresh object.
        let locale = unsafe {
            libc::newlocale(libc::LC_NUMERIC_MASK, name.as_ptr() as *const c_char, ptr::null_mut())
        };
        if locale.is_null() {
            return None;
        }
        // SAFETY: `locale` is a valid locale object created above.
        let previous = unsafe { libc::uselocale(locale) };
        Some(CNumericLocale { locale, previous })
    }
}

impl Drop for CNumericLocale {
    fn drop(&mut self) {
        // SAFETY: restores the thread's previous locale, then frees ours, which is no longer used.
        unsafe {
            libc::uselocale(self.previous);
            libc::freelocale(self.locale);
        }
    }
}

/// Room for UCX's own headers in a shared-memory segment beyond the message (tag, protocol and
/// transport headers take well under this).
const MM_SEG_HEADROOM: usize = 256;

/// Largest shared-memory segment UCX can use: its FIFO elements record a message's length in 16
/// bits, so a longer message's length wraps and the receiver never gets that message.
const MM_SEG_MAX: usize = u16::MAX as usize;

/// Elements of a worker's shared-memory receive FIFO. Our endpoints get no RMA lane on one host
/// (their description lists none), so rendezvous messages travel through this FIFO too, one
/// segment per element: UCX's 64 fill up behind one large message, and the sender then polls
/// until the receiver drains them (nothing wakes it). With more busy threads than cores that
/// polling cost blocking connections over half their throughput. Each element costs a segment of
/// shared memory per worker.
const MM_FIFO_SIZE: usize = 128;

/// Receive descriptors a worker's shared-memory transport adds to its pool at a time (one
/// segment each). The FIFO holds one per element from the start, and a descriptor stays out of
/// the pool beyond that only while UCX keeps an unexpected message in it: hadroNIO posts its
/// receives before a peer may send, so few are. UCX's 512 made every new worker write and map
/// 8.5 MiB of shared memory (its first chunk) for a FIFO of 128; the pool still grows by this much
/// if it runs out.
const MM_RX_BUFS_GROW: usize = MM_FIFO_SIZE + MM_FIFO_SIZE / 4;

/// Longest message that goes through shared memory in one copy: segments are sized for messages
/// up to this long (longer ones use UCX's rendezvous, and segments that large would cost every
/// worker megabytes).
const EAGER_MESSAGE_MAX: usize = 64 * 1024;

/// Prefixes of the UCX settings that shape shared memory (`MM_*` and its transports' own).
const SHARED_MEMORY_PREFIXES: [&str; 4] = ["UCX_MM_", "UCX_POSIX_", "UCX_SYSV_", "UCX_XPMEM_"];

/// The shared-memory segment hadroNIO asks for to carry messages of `longest` bytes in one copy;
/// `None` keeps UCX's own size.
fn segment_for(longest: usize) -> Option<usize> {
    (longest > 0 && longest <= EAGER_MESSAGE_MAX).then(|| (longest + MM_SEG_HEADROOM).min(MM_SEG_MAX))
}

/// How UCX's shared memory is laid out in a process whose messages of up to `longest` bytes
/// should go in one copy: the segment and FIFO sizes hadroNIO sets and every shared-memory setting
/// of the environment, as text. Two processes reach each other through shared memory only with
/// the same layout: a sender writes into the receiver's FIFO and segments as its own settings size
/// them (with a larger segment than the receiver's it writes past the receiver's segments).
pub fn shared_memory_layout(longest: usize) -> String {
    let mut settings: Vec<String> = std::env::vars()
        .filter(|(name, _)| SHARED_MEMORY_PREFIXES.iter().any(|p| name.starts_with(p)))
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    settings.sort();
    let segment = segment_for(longest).map_or_else(|| String::from("ucx"), |s| s.to_string());
    format!("segment {segment}, fifo {MM_FIFO_SIZE}; {}", settings.join(" "))
}

/// Sets a UCX option unless the environment sets it (`UCX_<name>`).
fn default_setting(config: *mut sys::ucp_config_t, name: &str, value: &str) {
    if std::env::var_os(format!("UCX_{name}")).is_some() {
        return;
    }
    set(config, name, value);
}

/// The transports of a context without shared memory: UCX's own list (`UCX_TLS`, all by
/// default) less posix, sysv and xpmem.
fn tls_without_shared_memory(user: Option<&str>) -> String {
    const SHARED: [&str; 6] = ["posix", "sysv", "xpmem", "mm", "sm", "shm"];
    match user.map(str::trim) {
        None | Some("") | Some("all") => String::from("^mm"),
        Some(list) if list.starts_with('^') => format!("{list},mm"),
        Some(list) => {
            let mut kept: Vec<&str> = list.split(',').map(str::trim).filter(|t| !SHARED.contains(t)).collect();
            if list.split(',').any(|t| matches!(t.trim(), "sm" | "shm")) {
                kept.extend(["cma", "knem"]);
            }
            if kept.is_empty() {
                // Nothing is left: UCX then finds no transport and the connection stays on TCP.
                kept.push("self");
            }
            kept.join(",")
        }
    }
}

/// Whether a transport list (`UCX_TLS`, `None`: all) may include the shared-memory transports
/// whose settings hadroNIO tunes (UCX warns about settings of transports it does not use).
fn uses_shared_memory(tls: Option<&str>) -> bool {
    match tls.map(str::trim) {
        None | Some("") => true,
        Some(list) if list.starts_with('^') => true,
        Some(list) => list.split(',').any(|t| matches!(t.trim(), "all" | "posix" | "sysv" | "mm" | "sm" | "shm")),
    }
}

/// The segment sizes the environment sets (`UCX_MM_SEG_SIZE`, `UCX_POSIX_SEG_SIZE`, ...).
fn segment_settings() -> impl Iterator<Item = (String, String)> {
    std::env::vars().filter(|(name, _)| SHARED_MEMORY_PREFIXES.iter().any(|p| name.strip_prefix(p) == Some("SEG_SIZE")))
}

/// Refuses a segment size above [`MM_SEG_MAX`]; a value UCX cannot parse is left to UCX, which
/// names it.
fn check_segment_size(name: &str, value: &str) -> std::result::Result<(), String> {
    match memunits(value) {
        Some(bytes) if bytes > MM_SEG_MAX as u64 => Err(format!(
            "{name}={} is more than {MM_SEG_MAX} bytes, the largest segment UCX's shared memory handles (longer messages would be lost)",
            value.trim()
        )),
        _ => Ok(()),
    }
}

/// A size in UCX's notation (`8256`, `64k`, `1MB`; `inf` and `auto` count as unlimited).
fn memunits(value: &str) -> Option<u64> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("inf") || value.eq_ignore_ascii_case("auto") {
        return Some(u64::MAX);
    }
    let digits = value.find(|c: char| !c.is_ascii_digit()).unwrap_or(value.len());
    let number: u64 = value[..digits].parse().ok()?;
    let unit = match value[digits..].to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        "t" | "tb" => 1 << 40,
        _ => return None,
    };
    Some(number.saturating_mul(unit))
}

fn set(config: *mut sys::ucp_config_t, name: &str, value: &str) {
    let (Ok(c_name), Ok(c_value)) = (CString::new(name), CString::new(value)) else {
        return;
    };
    // SAFETY: `config` is a valid configuration from `ucp_config_read`; both strings are
    // NUL-terminated.
    let status = unsafe { sys::ucp_config_modify(config, c_name.as_ptr(), c_value.as_ptr()) };
    if Status(status as i8) != Status::OK {
        warn!("could not set UCX {name}={value}: {}", Status(status as i8));
    }
}

/// Receive buffers of a worker's InfiniBand/RoCE interface (UCX: 4096).
const IB_RX_QUEUE_LEN: u32 = 1024;

/// Send buffers an InfiniBand/RoCE interface adds to its pool at a time (UCX: 1024).
const IB_TX_BUFS_GROW: u32 = 128;

/// Retransmissions of a reliable connection after the first send (`RC_RETRY_COUNT`, UCX's
/// default and the most InfiniBand allows).
const RC_RETRIES: u32 = 7;

/// The `RC_TIMEOUT` (the wait before each retransmission) with which a reliable connection
/// retransmits for at least `total` before it fails, or `None` where UCX's own (1 s, about 8 s in
/// all) is longer. InfiniBand counts the timeout as 4.096 us times a power of two, and UCX rounds
/// what it is given to the nearest one: the value is that power exactly.
fn rc_timeout(total: Duration) -> Option<String> {
    const UNIT: f64 = 4.096e-6;
    let each = total.as_secs_f64() / f64::from(RC_RETRIES + 1);
    if each <= 1.0 {
        return None;
    }
    let exponent = (each / UNIT).log2().ceil().clamp(1.0, 30.0);
    Some(format!("{:.6}s", UNIT * exponent.exp2()))
}

/// Owner of a `ucp_context_h`.
pub struct Context {
    pub(super) handle: sys::ucp_context_h,
}

// SAFETY: the context is created with `mt_workers_shared`, so UCX allows workers of one context to
// be created and used from different threads; the handle itself is only read after creation.
unsafe impl Send for Context {}
// SAFETY: see `Send`.
unsafe impl Sync for Context {}

/// What a context is made for.
#[derive(Clone, Copy, Debug)]
pub struct ContextOptions {
    /// The longest message that should go through shared memory in one copy rather than by
    /// rendezvous (which needs the sender to make progress before the receiver has it), up to
    /// 64 KiB; beyond that, UCX's segment size stays.
    pub longest: usize,
    /// Whether the context may use UCX's shared-memory transports (not for peers on this host
    /// that shared memory cannot reach: other namespaces).
    pub shared_memory: bool,
    /// How long a reliable connection over InfiniBand or RoCE keeps retransmitting to a peer
    /// that does not answer before its endpoint fails: at least this long (`None`: UCX's own
    /// timeout). The control connection gives up after `hadronio.livenessMillis`; a link
    /// outage shorter than that must not fail the UCX half first.
    pub retransmit_for: Option<Duration>,
}

impl Context {
    /// Reads the UCX configuration (environment `UCX_*`) under the C numeric locale, adds what
    /// `options` and this host's devices need, and creates a context for tagged messages, active
    /// messages and event-fd wake-up.
    pub fn new(options: &ContextOptions) -> std::result::Result<Arc<Context>, String> {
        let ContextOptions { longest, shared_memory, retransmit_for } = *options;
        let tls = std::env::var("UCX_TLS").ok();
        let net_devices = std::env::var("UCX_NET_DEVICES").ok();
        let _locale = CNumericLocale::enter();
        let mut config: *mut sys::ucp_config_t = ptr::null_mut();
        // SAFETY: null prefix and file name select the defaults; `config` receives the handle.
        check("ucp_config_read", unsafe {
            sys::ucp_config_read(ptr::null(), ptr::null(), &mut config)
        })
        .map_err(|e| e.to_string())?;
        if shared_memory && uses_shared_memory(tls.as_deref()) {
            if let Err(e) = segment_settings().try_for_each(|(name, value)| check_segment_size(&name, &value)) {
                // SAFETY: the configuration is not used after this.
                unsafe { sys::ucp_config_release(config) };
                return Err(e);
            }
            // Shared memory must stay usable on endpoints with peer error handling.
            default_setting(config, "MM_ERROR_HANDLING", "y");
            if let Some(segment) = segment_for(longest) {
                default_setting(config, "MM_SEG_SIZE", &segment.to_string());
            }
            default_setting(config, "MM_FIFO_SIZE", &MM_FIFO_SIZE.to_string());
            default_setting(config, "MM_RX_BUFS_GROW", &MM_RX_BUFS_GROW.to_string());
        } else if !shared_memory {
            set(config, "TLS", &tls_without_shared_memory(tls.as_deref()));
        }
        // Liveness is the control connection's (TCP keepalive and user timeout): UCX's own
        // keepalive would only add a timer descriptor per worker and a read to every arm.
        default_setting(config, "KEEPALIVE_INTERVAL", "inf");
        // Settings of UCX's InfiniBand/RoCE transports, only where UCX will use one (it warns
        // about settings no transport in use takes).
        let rdma = devices::in_use(devices::rdma_devices(), tls.as_deref(), net_devices.as_deref());
        if !rdma.is_empty() {
            if let Some(timeout) = retransmit_for.and_then(rc_timeout) {
                default_setting(config, "RC_TIMEOUT", &timeout);
            }
            // These interfaces register their buffers with the device (pinned memory): with
            // UCX's defaults (4096 receive buffers, send buffers added 1024 at a time) a worker
            // pinned about 75 MiB, and every selector and blocking channel has a worker of its
            // own. hadroNIO's credits bound the messages in flight per connection; a burst beyond
            // the receive queue waits for the receiver (RNR retries), nothing is lost.
            default_setting(config, "IB_RX_QUEUE_LEN", &IB_RX_QUEUE_LEN.to_string());
            default_setting(config, "IB_TX_BUFS_GROW", &IB_TX_BUFS_GROW.to_string());
        }
        let software = devices::in_use(devices::software_rdma_devices(), tls.as_deref(), net_devices.as_deref());
        if !software.is_empty() {
            // A software RoCE device (rxe) puts the sender's IPv4 header where UCX's UD
            // transport looks for the destination GID, so UD drops every packet it receives
            // through one: RC's wire-up, which goes over UD, then never completes.
            debug!("software RDMA devices: {}", software.join(", "));
            default_setting(config, "UD_ETH_DGID_CHECK", "n");
        }
        // SAFETY: an all-zero parameter struct is valid; only the fields in `field_mask` are read.
        let mut params: sys::ucp_params_t = unsafe { std::mem::zeroed() };
        params.field_mask = (sys::ucp_params_field::UCP_PARAM_FIELD_FEATURES
            | sys::ucp_params_field::UCP_PARAM_FIELD_MT_WORKERS_SHARED
            | sys::ucp_params_field::UCP_PARAM_FIELD_NAME)
            .0 as u64;
        params.features = (sys::ucp_feature::UCP_FEATURE_TAG
            | sys::ucp_feature::UCP_FEATURE_AM
            | sys::ucp_feature::UCP_FEATURE_WAKEUP)
            .0 as u64;
        params.mt_workers_shared = 1;
        let name = b"hadronio\0";
        params.name = name.as_ptr() as *const c_char;
        let mut handle: sys::ucp_context_h = ptr::null_mut();
        // SAFETY: `params` and `config` are valid for the call; `handle` receives the context.
        let status = unsafe {
            sys::ucp_init_version(BUILT_MAJOR, BUILT_MINOR, &params, config, &mut handle)
        };
        // SAFETY: the configuration is no longer needed after `ucp_init_version`.
        unsafe { sys::ucp_config_release(config) };
        check("ucp_init", status).map_err(|e| e.to_string())?;
        Ok(Arc::new(Context { handle }))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{
        check_segment_size, memunits, rc_timeout, segment_for, shared_memory_layout, tls_without_shared_memory, uses_shared_memory,
        Context, ContextOptions, MM_SEG_HEADROOM, MM_SEG_MAX,
    };

    #[test]
    fn a_reliable_connection_retransmits_for_as_long_as_the_control_connection_waits() {
        assert_eq!(rc_timeout(Duration::from_secs(8)), None, "UCX's own second per retransmission is as long");
        assert_eq!(rc_timeout(Duration::ZERO), None);
        for seconds in [9, 20, 30, 300, 86_400] {
            let timeout = rc_timeout(Duration::from_secs(seconds)).unwrap();
            let each: f64 = timeout.trim_end_matches('s').parse().unwrap();
            let exponent = (each / 4.096e-6).log2();
            assert!((exponent - exponent.round()).abs() < 1e-6, "{timeout} is not 4.096 us times a power of two");
            let total = each * 8.0;
            assert!(total >= seconds as f64 || exponent.round() == 30.0, "{timeout}: {total} s in all, less than {seconds} s");
            assert!(total < 2.0 * seconds as f64 + 1e-6, "{timeout}: {total} s in all, more than twice {seconds} s");
        }
    }

    #[test]
    fn shared_memory_settings_only_where_it_may_be_used() {
        assert!(uses_shared_memory(None));
        assert!(uses_shared_memory(Some("sm,self")));
        assert!(uses_shared_memory(Some("^ib")));
        assert!(!uses_shared_memory(Some("tcp")));
        assert!(!uses_shared_memory(Some("self,tcp,cma")));
    }

    #[test]
    fn shared_memory_is_left_out_of_any_transport_list() {
        assert_eq!(tls_without_shared_memory(None), "^mm");
        assert_eq!(tls_without_shared_memory(Some("^ib")), "^ib,mm");
        assert_eq!(tls_without_shared_memory(Some("tcp,posix,cma")), "tcp,cma");
        assert_eq!(tls_without_shared_memory(Some("sm,tcp")), "tcp,cma,knem");
        assert_eq!(tls_without_shared_memory(Some("posix")), "self");
    }

    #[test]
    fn segment_sizes_read_as_ucx_reads_them() {
        assert_eq!(memunits("8256"), Some(8256));
        assert_eq!(memunits("64k"), Some(65536));
        assert_eq!(memunits(" 2MB "), Some(2 << 20));
        assert_eq!(memunits("inf"), Some(u64::MAX));
        assert_eq!(memunits("64q"), None);
        assert_eq!(memunits("k"), None);
    }

    #[test]
    fn a_segment_longer_than_ucx_records_is_refused_by_name() {
        assert!(check_segment_size("UCX_MM_SEG_SIZE", "65535").is_ok());
        assert!(check_segment_size("UCX_MM_SEG_SIZE", "nonsense").is_ok(), "left to UCX, which names it");
        let refused = check_segment_size("UCX_POSIX_SEG_SIZE", "64k").unwrap_err();
        assert!(refused.contains("UCX_POSIX_SEG_SIZE=64k") && refused.contains(&MM_SEG_MAX.to_string()), "{refused}");
        assert!(check_segment_size("UCX_MM_SEG_SIZE", "inf").is_err());
    }

    /// Sizes of the UCX shared-memory segments this process holds open.
    fn shared_memory_segments() -> Vec<u64> {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                let target = std::fs::read_link(&path).ok()?;
                target.to_string_lossy().contains("ucx_shm_posix").then(|| std::fs::metadata(&path).ok().map(|m| m.len()))?
            })
            .collect()
    }

    #[test]
    fn a_worker_keeps_a_small_receive_pool_in_shared_memory() {
        if std::env::var_os("UCX_MM_RX_BUFS_GROW").is_some() || !uses_shared_memory(std::env::var("UCX_TLS").ok().as_deref()) {
            return;
        }
        let context = Context::new(&ContextOptions { longest: 16384, shared_memory: true, retransmit_for: None }).unwrap();
        let _worker = crate::ucx::Worker::new(&context).unwrap();
        let segments = shared_memory_segments();
        assert!(!segments.is_empty(), "the worker holds no shared-memory segment");
        // The receive pool is the largest: 160 descriptors of 16,640 bytes and their headers
        // (UCX's own 512 would take 8.6 MB).
        let largest = segments.iter().copied().max().unwrap_or(0);
        assert!(largest < 4 << 20, "a shared-memory segment of {largest} bytes: {segments:?}");
    }

    #[test]
    fn segments_hold_a_slot_up_to_what_ucx_records() {
        assert_eq!(segment_for(16384), Some(16384 + MM_SEG_HEADROOM));
        assert_eq!(segment_for(65536), Some(MM_SEG_MAX));
        assert_eq!(segment_for(65537), None);
        assert_eq!(segment_for(0), None);
        assert_ne!(shared_memory_layout(16384), shared_memory_layout(32768));
        assert_eq!(shared_memory_layout(1 << 20), shared_memory_layout(2 << 20), "both keep UCX's segments");
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: every worker holds an `Arc<Context>`, so none is left when this runs.
        unsafe { sys::ucp_cleanup(self.handle) };
    }
}
