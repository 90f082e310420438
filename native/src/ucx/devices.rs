//! The RDMA devices of this host as the kernel lists them (`/sys/class/infiniband`), and which of
//! them are software devices: Soft-RoCE (`rxe`) and soft-iWARP (`siw`) run the RDMA protocol on
//! the CPU over an ordinary Ethernet interface, where the kernel's own TCP is faster.

use std::path::Path;
use std::sync::OnceLock;

const CLASS: &str = "/sys/class/infiniband";

/// The RDMA devices of this host, by name (`mlx5_0`, `rxe0`, ...).
pub fn rdma_devices() -> Vec<String> {
    devices_in(Path::new(CLASS), |_| true)
}

/// The RDMA devices of this host that are software devices, by name (`rxe0`, ...).
pub fn software_rdma_devices() -> Vec<String> {
    software_in(Path::new(CLASS))
}

/// Whether the RDMA device `name` (as UCX names it in a transport, `rxe0` of `rc_verbs/rxe0:1`)
/// is a software device. The host's software devices are read once: UCX picks its devices when
/// the process's context is made, and every connection's upgrade asks.
pub fn is_software(name: &str) -> bool {
    static SOFTWARE: OnceLock<Vec<String>> = OnceLock::new();
    SOFTWARE.get_or_init(software_rdma_devices).iter().any(|device| device == name)
}

/// Of `devices`, those UCX may use under the environment's `UCX_TLS` and `UCX_NET_DEVICES`
/// (`None`: unset): none where the transports named leave out every InfiniBand/RoCE one, and
/// only the devices named (`mlx5_0:1`, `rxe0`) where devices are named.
pub fn in_use(devices: Vec<String>, tls: Option<&str>, net_devices: Option<&str>) -> Vec<String> {
    if !verbs_transports_allowed(tls) {
        return Vec::new();
    }
    match net_devices.map(str::trim) {
        None | Some("") | Some("all") => devices,
        Some(list) => {
            let named: Vec<&str> = list.split(',').map(|d| d.trim().split(':').next().unwrap_or("")).collect();
            devices.into_iter().filter(|d| named.contains(&d.as_str())).collect()
        }
    }
}

/// Whether a `UCX_TLS` value lets UCX use InfiniBand/RoCE transports: unset, `all`, an exclusion
/// list (`^...`) that does not exclude `ib`, or a list that names one of them.
fn verbs_transports_allowed(tls: Option<&str>) -> bool {
    const VERBS: [&str; 5] = ["ib", "rc", "ud", "dc", "gga"];
    let is_verbs = |t: &str| VERBS.iter().any(|v| t == *v || t.starts_with(&format!("{v}_")));
    match tls.map(str::trim) {
        None | Some("") => true,
        Some(list) if list.starts_with('^') => !list[1..].split(',').any(|t| t.trim() == "ib"),
        Some(list) => list.split(',').map(str::trim).any(|t| t == "all" || is_verbs(t)),
    }
}

fn software_in(class: &Path) -> Vec<String> {
    devices_in(class, is_virtual)
}

fn devices_in(class: &Path, wanted: impl Fn(&Path) -> bool) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(class) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| wanted(&entry.path()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// A device of the kernel's class directory is a software one when it hangs off no bus: its
/// entry resolves into `/sys/devices/virtual/`. Hardware adapters resolve to their PCI device.
fn is_virtual(entry: &Path) -> bool {
    std::fs::canonicalize(entry).is_ok_and(|path| path.components().any(|c| c.as_os_str() == "virtual"))
}

#[cfg(test)]
mod tests {
    use super::{devices_in, in_use, is_virtual, software_in};
    use std::os::unix::fs::symlink;

    #[test]
    fn devices_without_a_bus_are_software_ones() {
        let root = std::env::temp_dir().join(format!("hadronio-devices-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let class = root.join("class/infiniband");
        std::fs::create_dir_all(&class).unwrap();
        for (name, target) in [("rxe0", "devices/virtual/infiniband/rxe0"), ("mlx5_0", "devices/pci0000:00/0000:00:02.0/infiniband/mlx5_0")] {
            std::fs::create_dir_all(root.join(target)).unwrap();
            symlink(root.join(target), class.join(name)).unwrap();
        }
        assert_eq!(software_in(&class), ["rxe0"]);
        assert_eq!(devices_in(&class, |_| true), ["mlx5_0", "rxe0"]);
        assert!(is_virtual(&class.join("rxe0")));
        assert!(!is_virtual(&class.join("mlx5_0")));
        assert!(!is_virtual(&class.join("absent")));
        assert!(software_in(&root.join("nothing here")).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn only_the_devices_and_transports_the_environment_allows_are_in_use() {
        let all = || vec![String::from("mlx5_0"), String::from("rxe0")];
        assert_eq!(in_use(all(), None, None), all());
        assert_eq!(in_use(all(), Some("all"), Some("all")), all());
        assert_eq!(in_use(all(), Some("tcp"), None), Vec::<String>::new(), "UCX's TCP alone");
        assert_eq!(in_use(all(), Some("tcp,sm"), None), Vec::<String>::new());
        assert_eq!(in_use(all(), Some("rc_verbs,sm"), None), all());
        assert_eq!(in_use(all(), Some("ud,self"), None), all());
        assert_eq!(in_use(all(), Some("^tcp"), None), all());
        assert_eq!(in_use(all(), Some("^ib,tcp"), None), Vec::<String>::new());
        assert_eq!(in_use(all(), None, Some("eth0")), Vec::<String>::new(), "an Ethernet interface for UCX's TCP");
        assert_eq!(in_use(all(), None, Some("rxe0:1")), vec![String::from("rxe0")]);
        assert_eq!(in_use(all(), None, Some("mlx5_0:1, eth0")), vec![String::from("mlx5_0")]);
    }
}
