//! The one table from core errors to the JDK exceptions thrown by slow-path exports.
//! The Java side maps hot-path status codes the same way (dev.hadronio.internal.Status).

use jni::objects::JThrowable;
use jni::JNIEnv as Env;

use crate::core::error::{Error, Status};

/// `(exception class, whether it has a String constructor)` for a status.
fn exception_for(status: Status) -> (&'static str, bool) {
    match status {
        Status::Eof => ("java/io/EOFException", true),
        Status::Closed | Status::OutputShutdown => ("java/nio/channels/ClosedChannelException", false),
        Status::NotConnected => ("java/nio/channels/NotYetConnectedException", false),
        Status::Pending => ("java/nio/channels/ConnectionPendingException", false),
        Status::Reset | Status::BrokenPipe | Status::Protocol | Status::Io => ("java/io/IOException", true),
        Status::TimedOut => ("java/net/SocketTimeoutException", true),
        Status::Refused => ("java/net/ConnectException", true),
        Status::Bind => ("java/net/BindException", true),
        Status::BadHandle => ("java/lang/IllegalStateException", true),
        Status::Invalid => ("java/lang/IllegalArgumentException", true),
        Status::Internal => ("java/lang/Error", true),
    }
}

/// Throws the exception for `error` unless one is already pending.
pub fn throw(env: &mut Env<'_>, error: &Error) {
    if env.exception_check().unwrap_or(true) {
        return;
    }
    let (class, with_message) = exception_for(error.status);
    if with_message {
        let _ = env.throw_new(class, &error.message);
        return;
    }
    match env.new_object(class, "()V", &[]) {
        Ok(object) => {
            let _ = env.throw(JThrowable::from(object));
        }
        Err(_) => {
            let _ = env.throw_new("java/io/IOException", &error.message);
        }
    }
}
