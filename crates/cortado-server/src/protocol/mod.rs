//! The Redis protocol: requests in ([`request`]) and replies out ([`reply`]).

pub mod reply;
pub mod request;

pub use reply::{format_double, ErrorReply, Reply};
pub use request::{parse_i64, ProtocolError, RequestParser};
