//! Scatter/gather lists of raw memory handed over by Java (direct buffer addresses and lengths).

/// One region of memory: `(address, length)`.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    pub addr: usize,
    pub len: usize,
}

/// A cursor over regions to fill (reads) or to drain (writes).
///
/// The regions are memory the caller lent for the duration of one native call; a cursor never
/// outlives that call.
pub struct Cursor<'a> {
    regions: &'a [Region],
    index: usize,
    offset: usize,
    remaining: usize,
    moved: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(regions: &'a [Region]) -> Cursor<'a> {
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

    /// The current contiguous piece, at most `max` bytes: `(address, length)`.
    pub fn chunk(&self, max: usize) -> Option<(usize, usize)> {
        let region = self.regions.get(self.index)?;
        let len = (region.len - self.offset).min(max);
        if len == 0 {
            return None;
        }
        Some((region.addr + self.offset, len))
    }

    /// The contiguous pieces from the current position on, in order: `(address, length)`.
    pub fn pieces(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let rest = self.regions.get(self.index..).unwrap_or_default();
        rest.iter()
            .enumerate()
            .map(|(i, r)| if i == 0 { (r.addr + self.offset, r.len - self.offset) } else { (r.addr, r.len) })
            .filter(|&(_, len)| len > 0)
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
    ///
    /// # Safety
    /// Every region must be valid writable memory for the duration of the call and must not
    /// overlap `src`.
    pub unsafe fn fill_from(&mut self, mut src: &[u8]) -> usize {
        let mut copied = 0;
        while !src.is_empty() {
            let Some((addr, len)) = self.chunk(src.len()) else { break };
            // SAFETY: the caller guarantees the region is writable and disjoint from `src`; `len`
            // is within both.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), addr as *mut u8, len) };
            self.advance(len);
            src = &src[len..];
            copied += len;
        }
        copied
    }

    /// Appends up to `max` bytes out of the regions to `dst`; returns how many.
    ///
    /// # Safety
    /// Every region must be valid readable memory for the duration of the call and must not
    /// overlap `dst`'s allocation.
    pub unsafe fn drain_append(&mut self, dst: &mut Vec<u8>, max: usize) -> usize {
        let mut copied = 0;
        while copied < max {
            let Some((addr, len)) = self.chunk(max - copied) else { break };
            // SAFETY: as documented above.
            dst.extend_from_slice(unsafe { std::slice::from_raw_parts(addr as *const u8, len) });
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
        let regions = [
            Region { addr: a.as_mut_ptr() as usize, len: a.len() },
            Region { addr: b.as_mut_ptr() as usize, len: 0 },
            Region { addr: c.as_mut_ptr() as usize, len: c.len() },
        ];
        let mut cursor = Cursor::new(&regions);
        assert_eq!(cursor.remaining(), 7);
        // SAFETY: the regions point to the live local arrays above.
        assert_eq!(unsafe { cursor.fill_from(b"hello") }, 5);
        // SAFETY: as above.
        assert_eq!(unsafe { cursor.fill_from(b"world") }, 2);
        assert_eq!(cursor.remaining(), 0);
        assert_eq!(cursor.moved(), 7);
        assert_eq!(&a, b"hel");
        assert_eq!(&c, b"lowo");
        let _ = &mut b;
    }

    #[test]
    fn drains_in_order() {
        let a = *b"abc";
        let c = *b"defg";
        let regions = [
            Region { addr: a.as_ptr() as usize, len: 3 },
            Region { addr: c.as_ptr() as usize, len: 4 },
        ];
        let mut cursor = Cursor::new(&regions);
        assert_eq!(cursor.chunk(10), Some((a.as_ptr() as usize, 3)));
        let mut out = b"x".to_vec();
        // SAFETY: the regions point to the live local arrays above.
        assert_eq!(unsafe { cursor.drain_append(&mut out, 5) }, 5);
        assert_eq!(&out, b"xabcde");
        assert_eq!(cursor.pieces().collect::<Vec<_>>(), vec![(c.as_ptr() as usize + 2, 2)]);
        cursor.advance(2);
        assert_eq!(cursor.remaining(), 0);
        assert_eq!(cursor.pieces().count(), 0);
        assert!(cursor.chunk(1).is_none());
    }
}
