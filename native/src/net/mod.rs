//! Kernel networking: non-blocking TCP sockets and the epoll poller.

pub mod host;
pub mod poller;
pub mod socket;
