//! Scatter/gather lists of memory lent for one native call: a Java caller's direct buffers
//! (addresses and lengths), or Rust buffers.
//!
//! Whoever makes a [`Region`] from an address vouches for the memory (`unsafe`, at the JNI edge);
//! from then on the cursor hands out ordinary slices, so the code that moves bytes needs no
//! `unsafe` of its own. Only UCX, which may keep using memory after a call returns, is given raw
//! addresses ([`Cursor::chunk`]).

use std::marker::PhantomData;

/// One region of memory lent for `'a`: `(address, length)`, laid out as the Java side writes an
/// I/O vector's pairs.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Region<'a> {
    addr: usize,
    len: usize,
    lent: PhantomData<&'a mut [u8]>,
}

impl<'a> Region<'a> {
    /// The memory of `buf`.
    pub fn of(buf: &'a mut [u8]) -> Region<'a> {
        Region { addr: buf.as_mut_ptr() as usize, len: buf.len(), lent: PhantomData }
    }

    /// `len` bytes at `addr`.
    ///
    /// # Safety
    /// The bytes must be valid to read for `'a`, and to write as well if a cursor over the region
    /// fills it (a read); nothing else may access them meanwhile.
    pub unsafe fn raw(addr: usize, len: usize) -> Region<'a> {
        Region { addr, len, lent: PhantomData }
    }
}

/// A cursor over regions to fill (reads) or to drain (writes).
///
/// The regions are memory the caller lent for the duration of one native call; a cursor never
/// outlives that call.
pub struct Cursor<'a> {
    regions: &'a [Region<'a>],
    index: usize,
    offset: usize,
    remaining: usize,
    moved: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(regions: &'a [Region<'a>]) -> Cursor<'a> {
        let remaining = regions.iter().map(|r| r.len).sum();
        let mut cursor = Cursor { regions, index: 0, offset: 0, remaining, moved: 0 };
        cursor.skip_empty();
        cursor
    }

    fn skip_empty(&mut self) {
        while self.index < self.regions.len() && self.offset == self.regions[self.index].len {
            self.index += 1;
            self.offset = 0;
        }
    }

    /// Bytes not yet filled or drained.
    pub fn remaining(&self) -> usize {
        self.remaining
    }

    /// Bytes filled or drained so far.
    pub fn moved(&self) -> usize {
        self.moved
    }

    /// The current contiguous piece, at most `max` bytes, as `(address, length)`: for UCX, which
    /// the caller must keep from using it once the region's loan ends.
    pub fn chunk(&self, max: usize) -> Option<(usize, usize)> {
        let region = self.regions.get(self.index)?;
        let len = (region.len - self.offset).min(max);
        if len == 0 {
            return None;
        }
        Some((region.addr + self.offset, len))
    }

    /// The current contiguous piece, at most `max` bytes.
    pub fn chunk_bytes(&self, max: usize) -> Option<&[u8]> {
        let (addr, len) = self.chunk(max)?;
        // SAFETY: within a lent region, readable while the cursor lives (`Region::raw`).
        Some(unsafe { std::slice::from_raw_parts(addr as *const u8, len) })
    }

    /// The current contiguous piece, at most `max` bytes, to write into.
    pub fn chunk_mut(&mut self, max: usize) -> Option<&mut [u8]> {
        let (addr, len) = self.chunk(max)?;
        // SAFETY: within a lent region, writable while the cursor lives (`Region::raw`); `&mut
        // self` keeps the cursor from handing out another slice meanwhile.
        Some(unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) })
    }

    /// The contiguous pieces from the current position on, in order: `(address, length)`.
    fn pieces(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let rest = self.regions.get(self.index..).unwrap_or_default();
        rest.iter()
            .enumerate()
            .map(|(i, r)| if i == 0 { (r.addr + self.offset, r.len - self.offset) } else { (r.addr, r.len) })
            .filter(|&(_, len)| len > 0)
    }

    /// The contiguous pieces from the current position on, in order.
    pub fn slices(&self) -> impl Iterator<Item = &[u8]> + '_ {
        // SAFETY: each piece lies within a lent region, readable while the cursor lives.
        self.pieces().map(|(addr, len)| unsafe { std::slice::from_raw_parts(addr as *const u8, len) })
    }

    /// Puts the first contiguous pieces from the current position on into `parts`, as many as
    /// fit; returns how many (a gathering write's buffers).
    pub fn gather<'s>(&'s self, parts: &mut [&'s [u8]]) -> usize {
        let mut count = 0;
        for (slot, piece) in parts.iter_mut().zip(self.slices()) {
            *slot = piece;
            count += 1;
        }
        count
    }

    /// The contiguous pieces from the current position on, in order, to write into.
    pub fn slices_mut(&mut self) -> impl Iterator<Item = &mut [u8]> + '_ {
        // SAFETY: each piece lies within a lent region, writable while the cursor lives; the
        // pieces do not overlap and `&mut self` keeps the cursor from handing out others.
        self.pieces().map(|(addr, len)| unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) })
    }

    /// Marks `n` bytes of the current position as done.
    pub fn advance(&mut self, mut n: usize) {
        debug_assert!(n <= self.remaining);
        self.remaining -= n;
        self.moved += n;
        while n > 0 {
            let region = &self.regions[self.index];
            let step = (region.len - self.offset).min(n);
            self.offset += step;
            n -= step;
            self.skip_empty();
        }
    }

    /// Copies from `src` into the regions; returns how many bytes fit.
    pub fn fill_from(&mut self, mut src: &[u8]) -> usize {
        let mut copied = 0;
        while let Some(dst) = self.chunk_mut(src.len()) {
            let len = dst.len();
            dst.copy_from_slice(&src[..len]);
            self.advance(len);
            src = &src[len..];
            copied += len;
        }
        copied
    }

    /// Appends up to `max` bytes out of the regions to `dst`; returns how many.
    pub fn drain_append(&mut self, dst: &mut Vec<u8>, max: usize) -> usize {
        let mut copied = 0;
        while let Some(src) = self.chunk_bytes(max - copied) {
            let len = src.len();
            dst.extend_from_slice(src);
            self.advance(len);
            copied += len;
        }
        copied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_across_regions_and_skips_empty_ones() {
        let mut a = [0u8; 3];
        let mut b = [0u8; 0];
        let mut c = [0u8; 4];
        let regions = [Region::of(&mut a), Region::of(&mut b), Region::of(&mut c)];
        let mut cursor = Cursor::new(&regions);
        assert_eq!(cursor.remaining(), 7);
        assert_eq!(cursor.fill_from(b"hello"), 5);
        assert_eq!(cursor.fill_from(b"world"), 2);
        assert_eq!(cursor.remaining(), 0);
        assert_eq!(cursor.moved(), 7);
        assert_eq!(&a, b"hel");
        assert_eq!(&c, b"lowo");
    }

    #[test]
    fn drains_in_order() {
        let mut a = *b"abc";
        let mut c = *b"defg";
        let c_addr = c.as_ptr() as usize;
        let regions = [Region::of(&mut a), Region::of(&mut c)];
        let mut cursor = Cursor::new(&regions);
        assert_eq!(cursor.chunk_bytes(10), Some(&b"abc"[..]));
        let mut out = b"x".to_vec();
        assert_eq!(cursor.drain_append(&mut out, 5), 5);
        assert_eq!(&out, b"xabcde");
        assert_eq!(cursor.pieces().collect::<Vec<_>>(), vec![(c_addr + 2, 2)]);
        assert_eq!(cursor.slices().collect::<Vec<_>>(), vec![&b"fg"[..]]);
        cursor.advance(2);
        assert_eq!(cursor.remaining(), 0);
        assert_eq!(cursor.slices().count(), 0);
        assert!(cursor.chunk(1).is_none());
    }
}
