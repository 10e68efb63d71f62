//! Float arithmetic as Redis replies it: `INCRBYFLOAT`'s sum is computed in C's `long double`
//! and printed with 17 decimals, trailing zeros trimmed (see `csrc/long_double.c` for why this
//! is C).

use crate::protocol::ErrorReply;

/// The sum of two numbers written in decimal, as Redis's `INCRBYFLOAT` writes it.
pub fn add_decimal(a: &[u8], b: &[u8]) -> Result<String, ErrorReply> {
    let mut out = vec![0u8; 5 * 1024];
    let n = crate::sys::add_long_double(a, b, &mut out);
    match n {
        -1 => Err(ErrorReply::err("value is not a valid float")),
        n if n < 0 => Err(ErrorReply::err("increment would produce NaN or Infinity")),
        n => {
            out.truncate(n as usize);
            Ok(String::from_utf8(out).expect("printf writes ASCII"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_decimal_matches_redis_long_double_output() {
        assert_eq!(add_decimal(b"10.5", b"0.1").unwrap(), "10.6");
        assert_eq!(add_decimal(b"0.1", b"0.2").unwrap(), "0.3");
        assert_eq!(add_decimal(b"5", b"-5").unwrap(), "0");
        assert_eq!(add_decimal(b"3", b"1.5e2").unwrap(), "153");
        assert_eq!(add_decimal(b"-0.5", b"0.25").unwrap(), "-0.25");
    }

    #[test]
    fn add_decimal_refuses_bad_numbers_and_infinities() {
        for (a, b) in [
            (&b"abc"[..], &b"1"[..]),
            (b"1", b" 1"),
            (b"1", b"nan"),
            (b"", b"1"),
        ] {
            assert_eq!(
                add_decimal(a, b),
                Err(ErrorReply::err("value is not a valid float"))
            );
        }
        assert_eq!(
            add_decimal(b"1", b"inf"),
            Err(ErrorReply::err("increment would produce NaN or Infinity"))
        );
    }
}
