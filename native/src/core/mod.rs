//! The transport core: connections, listeners, selectors and the hubs they make progress on.

pub mod auth;
pub mod background;
pub mod blocking;
pub mod conn;
pub mod credits;
pub mod error;
pub mod hub;
pub mod identity;
pub mod iov;
pub mod lanes;
pub mod link;
pub mod listener;
pub mod negotiation;
pub mod peers;
pub mod protocol;
pub mod readiness;
pub mod selector;
pub mod spin;
pub mod stream;
