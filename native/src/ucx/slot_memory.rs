//! The memory of a connection's receive slots: an anonymous mapping of its own.
//!
//! A link posts all its slots at once (32 of 16 KiB by default, 512 KiB), but a connection with
//! one small message in flight writes only a few of their pages. From the heap, the allocator hands
//! out zeroed memory by writing zeros over all of it unless the block is a fresh mapping, and glibc
//! stops mapping blocks of this size afresh once the first one was freed (its mapping threshold
//! rises to the largest block freed): every later link then wrote and faulted in its whole 512 KiB
//! as it opened. A mapping of its own is zero without being written, so only the pages UCX writes
//! into become resident, and closing the link gives them back to the kernel.

use std::io;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Zeroed memory for receive slots, owned like a `Box<[u8]>`.
pub struct SlotMemory {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `SlotMemory` owns its mapping exclusively, as a `Box<[u8]>` owns its allocation; shared
// access only reads through `Deref`.
unsafe impl Send for SlotMemory {}
// SAFETY: as above.
unsafe impl Sync for SlotMemory {}

impl SlotMemory {
    /// `len` zero bytes (none of them resident until written).
    pub fn zeroed(len: usize) -> io::Result<SlotMemory> {
        if len == 0 {
            return Ok(SlotMemory::default());
        }
        // SAFETY: a private anonymous mapping at an address of the kernel's choice touches no
        // existing memory; the result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        NonNull::new(ptr.cast::<u8>()).map(|ptr| SlotMemory { ptr, len }).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))
    }
}

impl Default for SlotMemory {
    /// No memory (what a link leaves behind when its slots go to UCX's keeping).
    fn default() -> SlotMemory {
        SlotMemory { ptr: NonNull::dangling(), len: 0 }
    }
}

impl Deref for SlotMemory {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` bytes while `self` lives (a dangling pointer with
        // length 0 is a valid empty slice).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for SlotMemory {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for SlotMemory {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping was made by `zeroed` with this address and length and nothing
            // refers to it any more (a link hands memory that UCX may still write to its worker's
            // keeping instead of dropping it).
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident pages of `memory` (`mincore`).
    fn resident_pages(memory: &SlotMemory) -> usize {
        // SAFETY: sysconf reads a constant of the system.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mut flags = vec![0u8; memory.len().div_ceil(page)];
        // SAFETY: the range is this mapping, page-aligned at its start; `flags` has a byte per page.
        let rc = unsafe { libc::mincore(memory.as_ptr() as *mut libc::c_void, memory.len(), flags.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore: {}", io::Error::last_os_error());
        flags.iter().filter(|f| *f & 1 != 0).count()
    }

    #[test]
    fn memory_is_zero_and_only_written_pages_become_resident() {
        // A freed block of this size first, as a closed link leaves behind: from the heap, the
        // next one would be written with zeros all over.
        drop(vec![0u8; 512 * 1024]);
        let mut memory = SlotMemory::zeroed(512 * 1024).unwrap();
        assert_eq!(memory.len(), 512 * 1024);
        assert_eq!(resident_pages(&memory), 0);
        memory[5000] = 7;
        memory[300_000] = 9;
        assert_eq!(resident_pages(&memory), 2);
        assert!(memory.iter().enumerate().all(|(i, b)| *b == match i {
            5000 => 7,
            300_000 => 9,
            _ => 0,
        }));
    }

    #[test]
    fn empty_memory_maps_nothing() {
        let memory = SlotMemory::zeroed(0).unwrap();
        assert!(memory.is_empty());
        assert!(SlotMemory::default().is_empty());
    }
}
