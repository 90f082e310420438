//! `long` handles that cross JNI: a boxed `Arc<T>` tagged with a per-type magic number.
//!
//! Ownership: [`into_handle`] hands one reference to Java; [`destroy`] is the only function that
//! takes it back. The Java side clears its handle field before calling `destroy` and never calls
//! another export with that handle concurrently with (or after) `destroy`; a zero handle or a
//! handle of the wrong type is reported as [`Status::BadHandle`], never dereferenced as `T`.

use std::sync::Arc;

use crate::core::conn::Conn;
use crate::core::error::{Error, Status};
use crate::core::listener::Listener;
use crate::core::selector::{Key, Selector};

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

#[repr(C)]
struct Handle<T> {
    magic: u64,
    value: Arc<T>,
}

/// Gives one reference to `value` to Java.
pub fn into_handle<T: Tagged>(value: Arc<T>) -> i64 {
    Box::into_raw(Box::new(Handle { magic: T::MAGIC, value })) as i64
}

/// Borrows the value behind a handle for the duration of a call.
pub fn get<'a, T: Tagged>(handle: i64) -> Result<&'a Arc<T>, Error> {
    if handle == 0 {
        return Err(Error::new(Status::BadHandle, format!("{} is closed (zero handle)", T::NAME)));
    }
    let ptr = handle as *const Handle<T>;
    // SAFETY: non-zero handles come from `into_handle`; Java never passes a handle after
    // `destroy` (see module docs). The magic is read first, so a handle of another type is
    // rejected before its payload is used as `T` (all handle types share this layout prefix).
    let magic = unsafe { std::ptr::addr_of!((*ptr).magic).read() };
    if magic != T::MAGIC {
        return Err(Error::new(Status::BadHandle, format!("handle is not a live {}", T::NAME)));
    }
    // SAFETY: the magic matches, so this is a live `Handle<T>` owned by Java.
    Ok(unsafe { &(*ptr).value })
}

/// Takes the reference back from Java and drops it.
pub fn destroy<T: Tagged>(handle: i64) -> Result<(), Error> {
    get::<T>(handle)?;
    let ptr = handle as *mut Handle<T>;
    // SAFETY: `get` verified a live handle of this type; marking it dead first makes a (buggy)
    // second destroy fail the magic check as long as the memory was not reused.
    unsafe {
        (*ptr).magic = DEAD;
        drop(Box::from_raw(ptr));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_mistyped_handles_are_rejected() {
        assert_eq!(get::<Selector>(0).err().unwrap().status, Status::BadHandle);
        let selector = Selector::open().unwrap();
        let handle = into_handle(selector);
        assert!(get::<Selector>(handle).is_ok());
        assert_eq!(get::<Conn>(handle).err().unwrap().status, Status::BadHandle);
        destroy::<Selector>(handle).unwrap();
    }
}
