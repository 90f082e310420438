//! Kernel networking: non-blocking TCP sockets and the epoll poller.

pub mod poller;
pub mod socket;
