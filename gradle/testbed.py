#!/usr/bin/env python3
"""Two emulated hosts joined by one Ethernet link, each with a software RoCE device (Soft-RoCE, rxe).

    python3 gradle/testbed.py prepare          packages, the guest kernel and its initramfs (exit 77: no guests here)
    python3 gradle/testbed.py run --a CMD --b CMD [--timeout S] [--out DIR]
    python3 gradle/testbed.py check [--junit-dir DIR]
                                               `hadronio hosts check` in guest b against `hosts serve` in
                                               guest a (build :examples:installDist first)
    python3 gradle/testbed.py bench            `hadronio hosts bench` the same way, with ucx_perftest

Each guest is QEMU in software emulation running a Debian kernel (the linux-image package's kernel
and modules, unpacked, not installed) whose root is this machine's own file system, read-only over
virtio-9p: the guests run the checkout's build, JDK and tools as they are here. The output directory
is shared writable with both. Each guest gets a `tmpfs` /tmp, its own /dev/shm and network stack,
the address 10.77.0.1 (guest a) or 10.77.0.2 (guest b) on eth0, and `rxe0` over eth0. The link is
a bridge between two tap devices in a network namespace of its own where this runs as root, and
QEMU's `dgram` netdev otherwise (UDP datagrams between the two QEMU processes on 127.0.0.1): no
packet of the guests leaves this machine.

`run` starts both guests, runs CMD in each (bash, in the checkout, with TESTBED_NAME, TESTBED_SELF,
TESTBED_PEER and TESTBED_OUT set), prints their output as it comes (prefixed [a] and [b]), and
exits with 0 when both commands exited with 0, 1 otherwise, 77 when the machine cannot run guests.
A command may power its own guest off (`testbed-poweroff`) to play a host that vanishes, and cut
the link between the guests for a while (`testbed-link down`, then `testbed-link up`).
"""

import argparse
import fcntl
import gzip
import io
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIR = os.path.join(ROOT, 'build', 'testbed')
PACKAGES = {'qemu-system-x86_64': 'qemu-system-x86', '/bin/busybox': 'busybox-static', 'rdma': 'iproute2'}
ADDRESSES = {'a': '10.77.0.1', 'b': '10.77.0.2'}
# Loaded in the initramfs: enough to reach the host's file system and the link.
EARLY_MODULES = ['virtio_pci', 'virtio_net', '9pnet_virtio', '9p']
# Loaded in the guest: Soft-RoCE (crc32_generic first, or rxe cannot compute its ICRC and
# `rdma link add` fails with "No such file or directory"; crc32_pclmul computes it faster) and
# what `tc` needs to drop a protocol's packets.
GUEST_MODULES = ['crc32_generic', 'crc32_pclmul', 'ib_uverbs', 'rdma_rxe', 'sch_prio', 'cls_u32', 'act_gact']
GUEST_MEMORY_MB = 4096
# A CPU without AVX (QEMU 7.2's emulation of AVX2 is young) with SSE4.2 and PCLMULQDQ (the ICRC
# that Soft-RoCE computes for each packet). The guest's CPUs run on one host thread: with one
# host thread per guest CPU (QEMU's multi-threaded emulation), JVMs crashed now and then in code
# their JIT compiler had just written (SIGSEGV, SIGILL), as if another CPU ran older code.
GUEST_CPU = 'Westmere'
GUEST_CPUS = 2
# How long guest a (the server) may run on after guest b's command ended.
SERVER_GRACE = 30
# Jumbo frames, as RoCE networks are usually set up: RoCE's path MTU is then 4096.
MTU = 9000


def say(text):
    print('testbed: ' + text, flush=True)


class Unavailable(Exception):
    """The machine cannot run the guests (a skip, not a failure)."""


# --- preparing: packages, kernel, initramfs ----------------------------------------------------

def have(tool):
    return os.path.exists(tool) if tool.startswith('/') else shutil.which(tool) is not None


def is_static(path):
    with open(path, 'rb') as f:
        head = f.read(1 << 16)
    return head.startswith(b'\x7fELF') and b'ld-linux' not in head


def install_packages():
    missing = sorted({pkg for tool, pkg in PACKAGES.items() if not have(tool)})
    if have('/bin/busybox') and not is_static('/bin/busybox'):
        missing.append('busybox-static')
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which('apt-get'):
        raise Unavailable('missing %s and cannot install them here (needs root and apt-get)' % ', '.join(missing))
    say('installing ' + ' '.join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    subprocess.run(['apt-get', 'install', '-y', '--no-install-recommends'] + missing, env=env, check=True,
                   stdout=subprocess.DEVNULL)


def kernel_package():
    """The versioned kernel package that Debian's linux-image-amd64 currently points at."""
    out = subprocess.run(['apt-cache', 'depends', 'linux-image-amd64'], capture_output=True, text=True).stdout
    names = re.findall(r'Depends:\s*(linux-image-[0-9][^\s]*-amd64)', out)
    if not names:
        raise Unavailable('apt-cache knows no linux-image-amd64 (run apt-get update)')
    return names[0]


def unpack_kernel(base):
    package = kernel_package()
    target = os.path.join(base, 'kernel', package)
    if os.path.isdir(os.path.join(target, 'boot')):
        return target
    say('downloading and unpacking ' + package)
    downloads = os.path.join(base, 'downloads')
    os.makedirs(downloads, exist_ok=True)
    # apt drops privileges to _apt for downloads into a directory it may not write; it falls back to
    # root with a warning, which is noise here.
    subprocess.run(['apt-get', 'download', package], cwd=downloads, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    debs = [f for f in os.listdir(downloads) if f.startswith(package + '_') and f.endswith('.deb')]
    if not debs:
        raise Unavailable('apt-get download %s left no .deb' % package)
    partial = target + '.partial'
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    subprocess.run(['dpkg', '-x', os.path.join(downloads, debs[0]), partial], check=True)
    os.rename(partial, target)
    return target


def module_index(kernel):
    """Module name -> path of its .ko under the unpacked kernel package."""
    paths = {}
    for directory, _, files in os.walk(os.path.join(kernel, 'lib', 'modules')):
        for name in files:
            if name.endswith('.ko'):
                paths[name[:-3].replace('-', '_')] = os.path.join(directory, name)
    return paths


def module_depends(path):
    with open(path, 'rb') as f:
        found = re.search(rb'\x00depends=([^\x00]*)\x00', f.read())
    return [d.decode().replace('-', '_') for d in found.group(1).split(b',') if d] if found else []


def load_order(index, wanted):
    """`wanted` and everything they depend on, each after its dependencies."""
    order = []

    def visit(name, chain):
        if name in order:
            return
        if name not in index:
            raise Unavailable('the kernel package has no module %s (needed by %s)' % (name, ' <- '.join(chain)))
        for dependency in module_depends(index[name]):
            visit(dependency, chain + [name])
        order.append(name)

    for name in wanted:
        visit(name, [name])
    return order


def vmlinuz(kernel):
    boot = os.path.join(kernel, 'boot')
    names = [f for f in os.listdir(boot) if f.startswith('vmlinuz-')]
    if not names:
        raise Unavailable('no vmlinuz in ' + boot)
    return os.path.join(boot, names[0])


INIT = r'''#!/bin/busybox sh
# Guest pid 1: mounts this machine's root (read-only) and the shared output directory over 9p,
# gives the guest its own /proc, /sys, /dev, /tmp and /run, and hands over to the run's script.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in %(modules)s; do insmod /modules/$m.ko || echo "testbed: insmod $m failed"; done
share=$(sed -n 's/.*testbed.share=\([^ ]*\).*/\1/p' /proc/cmdline)
opts=trans=virtio,version=9p2000.L,msize=524288
# The host's files do not change while the guests run: let the guest cache them (a JVM starts in
# about a second instead of ten). The shared directory is read as it is written.
mount -t 9p -o $opts,ro,cache=loose hostroot /host || { echo "testbed: cannot mount the host's root"; poweroff -f; }
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs -o mode=1777 shm /host/dev/shm
# A checkout under /tmp stays visible through the guest's own /tmp.
checkout=$(sed -n 's/.*testbed.checkout=\([^ ]*\).*/\1/p' /proc/cmdline)
mkdir -p /hosttmp
mount -o bind /host/tmp /hosttmp
mount -t tmpfs -o mode=1777 tmp /host/tmp
case "$checkout" in
    /tmp/*) mkdir -p /host$checkout && mount -o bind /hosttmp${checkout#/tmp} /host$checkout ;;
esac
mount -t tmpfs run /host/run
mkdir -p /host$share
mount -t 9p -o $opts share /host$share || { echo "testbed: cannot mount $share"; poweroff -f; }
chroot /host /bin/bash $share/guest.sh
poweroff -f
'''


def cpio_newc(entries):
    """A cpio archive in the kernel's `newc` format of (path, mode, data) entries."""
    out = io.BytesIO()
    for ino, (path, mode, data) in enumerate(entries + [('TRAILER!!!', 0, b'')], start=1):
        name = path.encode() + b'\x00'
        header = '070701' + ''.join('%08x' % v for v in (
            ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name), 0))
        out.write(header.encode() + name)
        out.write(b'\x00' * (-(110 + len(name)) % 4))
        out.write(data)
        out.write(b'\x00' * (-len(data) % 4))
    return out.getvalue()


def build_initramfs(base, kernel):
    index = module_index(kernel)
    early = load_order(index, EARLY_MODULES)
    load_order(index, GUEST_MODULES)  # fails early when the package lacks them
    entries = [(d, stat.S_IFDIR | 0o755, b'') for d in
               ('bin', 'dev', 'proc', 'sys', 'host', 'modules')]
    with open('/bin/busybox', 'rb') as f:
        entries.append(('bin/busybox', stat.S_IFREG | 0o755, f.read()))
    for name in early:
        with open(index[name], 'rb') as f:
            entries.append(('modules/%s.ko' % name, stat.S_IFREG | 0o644, f.read()))
    entries.append(('init', stat.S_IFREG | 0o755, (INIT % {'modules': ' '.join(early)}).encode()))
    path = os.path.join(base, 'initramfs-%s.gz' % os.path.basename(kernel))
    with open(path + '.partial', 'wb') as f:
        f.write(gzip.compress(cpio_newc(entries), compresslevel=1))
    os.rename(path + '.partial', path)
    return path


def prepare(base):
    if sys.platform != 'linux' or os.uname().machine != 'x86_64':
        raise Unavailable('the guests need an x86_64 Linux machine')
    install_packages()
    kernel = unpack_kernel(base)
    return kernel, build_initramfs(base, kernel)


# --- running two guests ------------------------------------------------------------------------

GUEST = r'''set -u
export LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp TESTBED_NAME=%(name)s TESTBED_SELF=%(self)s TESTBED_PEER=%(peer)s TESTBED_OUT=%(share)s
log=%(share)s/%(name)s.log
step() { echo "testbed: $*" >> $log; }
hostname testbed-%(name)s
echo 1 > /proc/sys/kernel/sysrq
ip link set lo up
ip link set eth0 mtu %(mtu)d up
ip addr add %(self)s/24 dev eth0
for m in %(modules)s; do busybox insmod %(moddir)s/$m.ko 2>> $log || step "insmod $m failed"; done
rdma link add rxe0 type rxe netdev eth0 >> $log 2>&1 || step "rdma link add rxe0 failed"
printf '#!/bin/sh\necho poweroff > %(share)s/%(name)s.rc; sync; echo o > /proc/sysrq-trigger\n' > /tmp/testbed-poweroff
cat > /tmp/testbed-link <<'LINK'
#!/bin/sh
# testbed-link down|up: cuts or restores the link between the guests on the host's side.
case "$1" in down|up) ;; *) echo "usage: testbed-link down|up" >&2; exit 2;; esac
echo "$1" > %(share)s/link.request
for i in $(seq 300); do
  state=$(cat %(share)s/link.state 2>/dev/null)
  [ "$state" = "$1" ] && exit 0
  [ "$state" = "unsupported" ] && { echo "testbed-link: this link cannot be cut" >&2; exit 1; }
  sleep 0.1
done
echo "testbed-link: the host did not answer" >&2; exit 1
LINK
chmod +x /tmp/testbed-poweroff /tmp/testbed-link
export PATH=/tmp:$PATH
step "guest %(name)s up after $(cut -d' ' -f1 /proc/uptime) s: $(rdma link show 2>&1 | head -1)"
ulimit -n 65536
cd %(cwd)s
# One writer appends to the log: the shared directory does not order appends of several.
timeout -k 5 %(timeout)d bash -c %(command)s < /dev/null 2>&1 | cat >> $log
echo ${PIPESTATUS[0]} > %(share)s/%(name)s.rc
sync
echo o > /proc/sysrq-trigger
'''


def free_udp_ports(count):
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(('127.0.0.1', 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class Link:
    """The guests' Ethernet link. As root: a bridge in a network namespace of its own with one tap
    device per guest (queues long enough that RoCE's bursts are not dropped on the way). Otherwise
    QEMU's `dgram` netdev: UDP between the two QEMU processes on 127.0.0.1, whose socket buffers
    overflow under bursts (RC then retransmits after its timeout)."""

    def __init__(self):
        self.namespace = None
        if os.geteuid() == 0 and os.path.exists('/dev/net/tun') and shutil.which('ip'):
            self.namespace = 'hadronio-testbed-%d' % os.getpid()
            ip = ['ip', '-n', self.namespace]
            subprocess.run(['ip', 'netns', 'add', self.namespace], check=True)
            subprocess.run(ip + ['link', 'add', 'br0', 'mtu', str(MTU), 'type', 'bridge'], check=True)
            for name in ('a', 'b'):
                subprocess.run(ip + ['tuntap', 'add', 'tap-' + name, 'mode', 'tap'], check=True)
                subprocess.run(ip + ['link', 'set', 'tap-' + name, 'mtu', str(MTU), 'txqueuelen', '10000',
                                     'master', 'br0', 'up'], check=True)
            subprocess.run(ip + ['link', 'set', 'br0', 'up'], check=True)
        else:
            self.ports = free_udp_ports(2)

    def describe(self):
        return 'a bridge in network namespace ' + self.namespace if self.namespace else 'UDP on 127.0.0.1'

    def wrap(self, command):
        return ['ip', 'netns', 'exec', self.namespace] + command if self.namespace else command

    def netdev(self, name):
        if self.namespace:
            return 'tap,id=link,ifname=tap-%s,script=no,downscript=no' % name
        mine, theirs = (self.ports[0], self.ports[1]) if name == 'a' else (self.ports[1], self.ports[0])
        return ('dgram,id=link,local.type=inet,local.host=127.0.0.1,local.port=%d,'
                'remote.type=inet,remote.host=127.0.0.1,remote.port=%d' % (mine, theirs))

    def set(self, state):
        """Cuts (`down`) or restores (`up`) the link on the host's side: guest b's tap stops
        carrying frames, as if its cable were pulled; the guests' own interfaces stay up."""
        if not self.namespace:
            return 'unsupported'
        subprocess.run(['ip', '-n', self.namespace, 'link', 'set', 'tap-b', state], check=True)
        return state

    def close(self):
        if self.namespace:
            subprocess.run(['ip', 'netns', 'del', self.namespace])


def qemu_command(name, kernel, initramfs, share, link):
    mac = '52:54:00:77:00:0%d' % (1 if name == 'a' else 2)
    return link.wrap([
        'qemu-system-x86_64', '-accel', 'tcg,thread=single', '-cpu', GUEST_CPU, '-smp', str(GUEST_CPUS), '-m', str(GUEST_MEMORY_MB),
        '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot',
        '-serial', 'file:' + os.path.join(share, name + '.console'),
        '-kernel', vmlinuz(kernel), '-initrd', initramfs,
        '-append', 'console=ttyS0 quiet panic=-1 testbed.share=%s testbed.name=%s testbed.checkout=%s' % (share, name, ROOT),
        '-virtfs', 'local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap',
        '-virtfs', 'local,path=%s,mount_tag=share,security_model=none,multidevs=remap' % share,
        '-netdev', link.netdev(name),
        '-device', 'virtio-net-pci,netdev=link,mac=%s,romfile=,rx_queue_size=1024,tx_queue_size=1024' % mac,
    ])


class Follower:
    """Prints what a guest appends to its log, line by line, with a prefix."""

    def __init__(self, path, prefix):
        self.path, self.prefix, self.offset, self.partial = path, prefix, 0, b''

    def poll(self, final=False):
        try:
            with open(self.path, 'rb') as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        self.offset += len(data)
        lines = (self.partial + data).split(b'\n')
        self.partial = lines.pop()
        if final and self.partial:
            lines.append(self.partial)
            self.partial = b''
        for line in lines:
            print(self.prefix + line.decode('utf-8', 'replace'), flush=True)


def stop(guest):
    if guest.poll() is None:
        os.killpg(guest.pid, signal.SIGKILL)
        guest.wait()


def serve_link_requests(share, link):
    """Carries out a guest's `testbed-link down|up` (see the guest script)."""
    request = os.path.join(share, 'link.request')
    try:
        with open(request) as f:
            wanted = f.read().strip()
    except FileNotFoundError:
        return
    os.remove(request)
    state = link.set(wanted) if wanted in ('down', 'up') else 'unsupported'
    say('link between the guests: ' + state)
    with open(os.path.join(share, 'link.state'), 'w') as f:
        f.write(state + '\n')


def exclusive(base):
    """Holds the machine's testbed lock while the returned file stays open: two runs at once, of
    this checkout or another, would share the host's cores (and this checkout's output directory)."""
    os.makedirs(base, exist_ok=True)
    lock = open(os.path.join(tempfile.gettempdir(), 'hadronio-testbed.lock'), 'w')
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say('another testbed run holds %s; waiting for it' % lock.name)
        fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def run(base, commands, timeout, out):
    lock = exclusive(base)
    try:
        return run_guests(base, commands, timeout, out)
    finally:
        lock.close()


def run_guests(base, commands, timeout, out):
    kernel, initramfs = prepare(base)
    share = os.path.abspath(out or os.path.join(base, 'run'))
    shutil.rmtree(share, ignore_errors=True)
    os.makedirs(share)
    moddir = os.path.join(share, 'modules')
    os.makedirs(moddir)
    index = module_index(kernel)
    rdma = load_order(index, GUEST_MODULES)
    for name in rdma:
        shutil.copy(index[name], os.path.join(moddir, name + '.ko'))
    link = Link()
    guests, followers = {}, []
    started = time.monotonic()
    # One script per guest; init runs guest.sh, which picks the guest's own by the kernel command line.
    scripts = {}
    for name in ('a', 'b'):
        peer = 'b' if name == 'a' else 'a'
        scripts[name] = GUEST % {
            'name': name, 'self': ADDRESSES[name], 'peer': ADDRESSES[peer], 'share': share,
            'modules': ' '.join(rdma), 'moddir': moddir, 'cwd': shlex.quote(os.getcwd()),
            'mtu': MTU, 'timeout': timeout, 'command': shlex.quote(commands[name]),
        }
        with open(os.path.join(share, 'guest-%s.sh' % name), 'w') as f:
            f.write(scripts[name])
    with open(os.path.join(share, 'guest.sh'), 'w') as f:
        f.write('case "$(sed -n \'s/.*testbed.name=\\([ab]\\).*/\\1/p\' /proc/cmdline)" in\n'
                '  a) exec bash %s/guest-a.sh ;;\n  *) exec bash %s/guest-b.sh ;;\nesac\n' % (share, share))
    for name in ('a', 'b'):
        command = qemu_command(name, kernel, initramfs, share, link)
        guests[name] = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=open(os.path.join(share, name + '.qemu'), 'w'),
                                        start_new_session=True)
        followers.append(Follower(os.path.join(share, name + '.log'), '[%s] ' % name))
    say('guests a (%s) and b (%s) starting, linked by %s; output in %s'
        % (ADDRESSES['a'], ADDRESSES['b'], link.describe(), share))
    deadline = started + timeout + 120
    try:
        b_done = None
        while any(g.poll() is None for g in guests.values()):
            for f in followers:
                f.poll()
            serve_link_requests(share, link)
            # Guest a serves guest b: once b is done, a has a while to end on its own.
            if guests['b'].poll() is not None and guests['a'].poll() is None:
                b_done = b_done or time.monotonic()
                if time.monotonic() - b_done > SERVER_GRACE:
                    say('guest b is done; stopping guest a')
                    stop(guests['a'])
                    with open(os.path.join(share, 'a.rc'), 'w') as f:
                        f.write('stopped\n')
            if time.monotonic() > deadline:
                say('the guests did not finish within %d s; stopping them' % (timeout + 120))
                break
            time.sleep(0.5)
    finally:
        for g in guests.values():
            stop(g)
        link.close()
    for f in followers:
        f.poll(final=True)
    status = 0
    for name in ('a', 'b'):
        try:
            with open(os.path.join(share, name + '.rc')) as f:
                text = f.read().strip()
            rc = 0 if text in ('poweroff', 'stopped') else int(text or '1')
        except (FileNotFoundError, ValueError):
            rc = None
        if rc is None:
            say('guest %s: its command did not finish (see %s)' % (name, os.path.join(share, name + '.console')))
            status = 1
        elif rc != 0:
            say('guest %s: its command exited with %d' % (name, rc))
            status = 1
    say('done in %.0f s' % (time.monotonic() - started))
    return status


# --- what the build runs in the guests ---------------------------------------------------------

HADRONIO = os.path.join(ROOT, 'examples', 'build', 'install', 'hadronio', 'bin', 'hadronio')
SUITE = 'dev.hadronio.hosts.AcrossHosts'
# Guest a serves: hadroNIO on ports 7000-7006, the JDK's provider on 7100-7106. Both JVMs take
# software RDMA (the testbed has nothing else); UCX gets no variable.
SERVE = ('DISABLE_HADRONIO=true {h} hosts serve -a 0.0.0.0:7100 > $TESTBED_OUT/jdk-server.log 2>&1 &\n'
         'JAVA_OPTS="-Dhadronio.softwareRdma=true" {h} hosts serve -a 0.0.0.0:7000 --poweroff-command testbed-poweroff')
CHECK = ('JAVA_OPTS="-Dhadronio.softwareRdma=true" {h} hosts check -r $TESTBED_PEER --jdk-port 7100 --faults '
         '--link-command testbed-link --quit --junit $TESTBED_OUT/TEST-{suite}.xml')


# ucx_perftest's server for `bench` (UCX as hadroNIO sets it up on a software RoCE device, see
# native/src/ucx/context.rs); guest a serves it again after each test.
PERFTEST_SERVE = ('(while true; do UCX_UD_ETH_DGID_CHECK=n {p} -p 13337 > /dev/null 2>&1; done) &\n')
BENCH = ('JAVA_OPTS="-Dhadronio.softwareRdma=true" {h} hosts bench -r $TESTBED_PEER --jdk-port 7100 --perftest {p} '
         '-o $TESTBED_OUT/bench')


def perftest():
    """The ucx_perftest built with the bundled UCX (cargo's build directory of ucx1-sys)."""
    build = os.path.join(ROOT, 'target', 'release', 'build')
    found = sorted((os.path.getmtime(p), p) for p in
                   (os.path.join(build, d, 'out', 'bin', 'ucx_perftest') for d in
                    (os.listdir(build) if os.path.isdir(build) else []) if d.startswith('ucx1-sys-'))
                   if os.access(p, os.X_OK))
    if not found:
        raise SystemExit('testbed: no ucx_perftest under %s; build first: gradle --no-daemon :examples:installDist' % build)
    return found[-1][1]


def bench(base, timeout):
    """`hadronio hosts bench` in guest b against guest a: both providers and ucx_perftest."""
    h, p = launcher(), perftest()
    out = os.path.join(base, 'bench')
    serve = PERFTEST_SERVE.format(p=p) + SERVE.format(h=h)
    status = run(base, {'a': serve, 'b': BENCH.format(h=h, p=p)}, timeout, out)
    say('figures and plots in ' + os.path.join(out, 'bench'))
    return status


def launcher():
    if not os.access(HADRONIO, os.X_OK):
        raise SystemExit('testbed: %s is missing; build it first: gradle --no-daemon :examples:installDist' % HADRONIO)
    return HADRONIO


def skipped_report(directory, why):
    """A JUnit report with one skipped test, so that a machine without guests shows in the totals."""
    os.makedirs(directory, exist_ok=True)
    text = ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="%s" tests="1" skipped="1" failures="0" errors="0">\n'
            '  <testcase classname="%s" name="testbed"><skipped message="%s"/></testcase>\n</testsuite>\n'
            % (SUITE, SUITE, why.replace('&', '&amp;').replace('"', '&quot;').replace('<', '&lt;')))
    with open(os.path.join(directory, 'TEST-%s.xml' % SUITE), 'w') as f:
        f.write(text)


def check(base, junit_dir, timeout):
    """The `hadronio hosts` checks between the guests; their JUnit report goes to `junit_dir`."""
    h = launcher()
    out = os.path.join(base, 'check')
    status = run(base, {'a': SERVE.format(h=h), 'b': CHECK.format(h=h, suite=SUITE)}, timeout, out)
    report = os.path.join(out, 'TEST-%s.xml' % SUITE)
    if junit_dir:
        os.makedirs(junit_dir, exist_ok=True)
        if os.path.exists(report):
            shutil.copy(report, junit_dir)
        else:
            say('the checks wrote no report')
            status = 1
    return status


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('action', choices=['prepare', 'run', 'check', 'bench'])
    parser.add_argument('--dir', default=DEFAULT_DIR, help='where the kernel and initramfs are kept')
    parser.add_argument('--a', default='true', help="run: guest a's command")
    parser.add_argument('--b', default='true', help="run: guest b's command")
    parser.add_argument('--timeout', type=int, default=1800, help='seconds each command may run')
    parser.add_argument('--out', help='run: shared output directory (default: DIR/run)')
    parser.add_argument('--junit-dir', help='check: where the JUnit report goes')
    args = parser.parse_args()
    try:
        if args.action == 'run':
            return run(args.dir, {'a': args.a, 'b': args.b}, args.timeout, args.out)
        if args.action == 'check':
            return check(args.dir, args.junit_dir, args.timeout)
        if args.action == 'bench':
            return bench(args.dir, args.timeout)
        kernel, initramfs = prepare(args.dir)
        say('ready: %s, %s' % (vmlinuz(kernel), initramfs))
        return 0
    except Unavailable as e:
        say('cannot run guests on this machine: %s (skipped)' % e)
        if args.action == 'check' and args.junit_dir:
            skipped_report(args.junit_dir, 'no guests on this machine: %s' % e)
            return 0
        return SKIP


if __name__ == '__main__':
    sys.exit(main())
