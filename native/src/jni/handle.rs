//! `long` handles that cross JNI: a boxed `Arc<T>` tagged with a per-type magic number, with a
//! count of the calls borrowing it.
//!
//! Ownership: [`into_handle`] hands one reference to Java; [`destroy`] is the only function that
//! takes it back. Every call borrows the handle through [`get`] for its duration, and the box is
//! freed only when it is destroyed and no borrow is left: a `destroy` that races with a running
//! call (a blocked read, say) defers the free to the end of that call, whatever the Java side does.
//! What the count cannot catch is a call that *starts* after `destroy` freed the box; the Java
//! side clears its handle before destroying it and lets no call start after that (its
//! `NativeHandle` counts its own borrowers too). Reads and writes, which Java makes only inside
//! such a borrow, take the value through [`lent`] without counting again. A zero handle, a destroyed one whose memory was
//! not reused yet, or a handle of the wrong type is reported as [`Status::BadHandle`], never
//! dereferenced as `T`.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::core::conn::Conn;
use crate::core::error::{Error, Status};
use crate::core::listener::Listener;
use crate::core::readiness::Key;
use crate::core::selector::Selector;

pub trait Tagged {
    const MAGIC: u64;
    const NAME: &'static str;
}

impl Tagged for Conn {
    const MAGIC: u64 = 0x6861_6472_636f_6e6e;
    const NAME: &'static str = "socket channel";
}

impl Tagged for Listener {
    const MAGIC: u64 = 0x6861_6472_6c69_7374;
    const NAME: &'static str = "server socket channel";
}

impl Tagged for Selector {
    const MAGIC: u64 = 0x6861_6472_7365_6c65;
    const NAME: &'static str = "selector";
}

impl Tagged for Key {
    const MAGIC: u64 = 0x6861_6472_6b65_7973;
    const NAME: &'static str = "selection key";
}

const DEAD: u64 = 0xdead_dead_dead_dead;

/// In [`Handle::state`]: `destroy` ran; the rest of the word counts the borrows.
const DESTROYED: u64 = 1 << 63;

#[repr(C)]
struct Handle<T> {
    magic: AtomicU64,
    state: AtomicU64,
    value: Arc<T>,
}

/// A call's borrow of the value behind a handle; the handle stays allocated while it lives.
pub struct Borrow<T> {
    ptr: *mut Handle<T>,
}

impl<T> Deref for Borrow<T> {
    type Target = Arc<T>;

    fn deref(&self) -> &Arc<T> {
        // SAFETY: a borrow keeps the handle allocated (see `Drop`).
        unsafe { &(*self.ptr).value }
    }
}

impl<T> Drop for Borrow<T> {
    fn drop(&mut self) {
        // SAFETY: the handle is allocated until the last borrow of a destroyed handle frees it.
        unsafe { give_back(self.ptr) };
    }
}

/// Ends one borrow; the last borrow of a destroyed handle frees it.
///
/// # Safety
/// `ptr` is a handle from [`into_handle`] on which this caller holds a borrow.
unsafe fn give_back<T>(ptr: *mut Handle<T>) {
    // SAFETY: the caller's borrow keeps the handle allocated until this decrement.
    let before = unsafe { (*ptr).state.fetch_sub(1, Ordering::AcqRel) };
    if before == DESTROYED | 1 {
        // SAFETY: destroyed and this was the last borrow: nobody else holds the handle.
        unsafe { free(ptr) };
    }
}

/// Frees a handle that is destroyed and borrowed by nobody.
///
/// # Safety
/// The caller is the last holder of `ptr`.
unsafe fn free<T>(ptr: *mut Handle<T>) {
    // SAFETY: as the caller guarantees. The dead magic makes a (buggy) later use fail the
    // check as long as the memory was not reused.
    unsafe {
        (*ptr).magic.store(DEAD, Ordering::Relaxed);
        drop(Box::from_raw(ptr));
    }
}

/// Gives one reference to `value` to Java.
pub fn into_handle<T: Tagged>(value: Arc<T>) -> i64 {
    let handle = Handle { magic: AtomicU64::new(T::MAGIC), state: AtomicU64::new(0), value };
    Box::into_raw(Box::new(handle)) as i64
}

/// The handle's box if it carries the magic of `T`.
fn checked<T: Tagged>(handle: i64) -> Result<*mut Handle<T>, Error> {
    if handle == 0 {
        return Err(Error::new(Status::BadHandle, format!("{} is closed (zero handle)", T::NAME)));
    }
    let ptr = handle as *mut Handle<T>;
    // SAFETY: non-zero handles come from `into_handle`, and Java starts no call after `destroy`
    // (see module docs). All handle types share the layout prefix `magic`, which is read first,
    // so a handle of another type is rejected before its payload is used as `T`.
    let magic = unsafe { (*ptr).magic.load(Ordering::Relaxed) };
    if magic != T::MAGIC {
        return Err(Error::new(Status::BadHandle, format!("handle is not a live {}", T::NAME)));
    }
    Ok(ptr)
}

/// Borrows the value behind a handle for the duration of a call.
pub fn get<T: Tagged>(handle: i64) -> Result<Borrow<T>, Error> {
    let ptr = checked::<T>(handle)?;
    // SAFETY: `checked` found a live handle of this type.
    let before = unsafe { (*ptr).state.fetch_add(1, Ordering::AcqRel) };
    if before & DESTROYED != 0 {
        // SAFETY: the increment above is a borrow; giving it back may free the handle.
        unsafe { give_back(ptr) };
        return Err(Error::new(Status::BadHandle, format!("{} is closed (destroyed handle)", T::NAME)));
    }
    Ok(Borrow { ptr })
}

/// The value behind a handle for a call that Java made inside its own borrow of the handle
/// (`NativeHandle.enter` .. `leave`), which keeps `destroy` from running until the call is over:
/// the hot calls (reads and writes) count their borrow once, on the Java side, not twice.
pub struct Lent<T> {
    ptr: *mut Handle<T>,
}

impl<T> Deref for Lent<T> {
    type Target = Arc<T>;
    fn deref(&self) -> &Arc<T> {
        // SAFETY: the Java caller's borrow keeps the handle allocated for the call (see `lent`).
        unsafe { &(*self.ptr).value }
    }
}

/// The value behind a handle, for a call made inside a Java-side borrow of it (see [`Lent`]);
/// the checks of [`get`] except the count.
pub fn lent<T: Tagged>(handle: i64) -> Result<Lent<T>, Error> {
    let ptr = checked::<T>(handle)?;
    // SAFETY: `checked` found a live handle of this type.
    if unsafe { (*ptr).state.load(Ordering::Acquire) } & DESTROYED != 0 {
        return Err(Error::new(Status::BadHandle, format!("{} is closed (destroyed handle)", T::NAME)));
    }
    Ok(Lent { ptr })
}

/// Takes the reference back from Java: the handle is freed now, or by the last call still
/// borrowing it.
pub fn destroy<T: Tagged>(handle: i64) -> Result<(), Error> {
    let ptr = checked::<T>(handle)?;
    // SAFETY: `checked` found a live handle of this type.
    let before = unsafe { (*ptr).state.fetch_or(DESTROYED, Ordering::AcqRel) };
    if before & DESTROYED != 0 {
        return Err(Error::new(Status::BadHandle, format!("{} destroyed twice", T::NAME)));
    }
    if before == 0 {
        // SAFETY: destroyed and borrowed by nobody.
        unsafe { free(ptr) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings;

    #[test]
    fn zero_and_mistyped_handles_are_rejected() {
        assert_eq!(get::<Selector>(0).err().unwrap().status, Status::BadHandle);
        let selector = Selector::open(settings()).unwrap();
        let handle = into_handle(selector);
        assert!(get::<Selector>(handle).is_ok());
        assert_eq!(get::<Conn>(handle).err().unwrap().status, Status::BadHandle);
        destroy::<Selector>(handle).unwrap();
    }

    #[test]
    fn a_destroy_during_a_call_frees_after_it() {
        let selector = Selector::open(settings()).unwrap();
        let weak = Arc::downgrade(&selector);
        let handle = into_handle(selector);
        let call = get::<Selector>(handle).unwrap();
        destroy::<Selector>(handle).unwrap();
        // The call still uses the value; new calls and a second destroy are refused.
        assert!(weak.upgrade().is_some());
        assert!(Arc::strong_count(&call) >= 1);
        assert_eq!(get::<Selector>(handle).err().unwrap().status, Status::BadHandle);
        assert_eq!(destroy::<Selector>(handle).err().unwrap().status, Status::BadHandle);
        drop(call);
        assert!(weak.upgrade().is_none(), "the last borrow frees the handle");
    }
}
