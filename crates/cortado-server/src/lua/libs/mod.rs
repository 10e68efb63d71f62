//! The libraries Redis gives scripts beyond Lua's own: `bit` (LuaBitOp), `cjson`
//! (lua-cjson), `cmsgpack` (lua-cmsgpack) and `struct` (Roberto Ierusalimschy's `struct`),
//! written in Rust here: the vendored Lua build has only Lua's standard libraries.
//!
//! Each behaves as Redis 7.0's on the common cases, errors included: a library function's
//! error names the script's line first (`user_script:1: bad argument #1 to 'band' ...`), as
//! C's `luaL_error` does. Where they differ from Redis's is said in each module.
//!
//! # Design
//!
//! - **Tables of Rust functions**, set as globals before the sandbox makes them read-only
//!   proxies (`setup.lua`), as `string` and `math` are.
//! - Written out, not on a general JSON or MessagePack crate: lua-cjson's output (`%.14g`
//!   numbers, `\/` escapes, sparse-array rules) and its reading (C's `strtod` numbers, bytes
//!   without a UTF-8 check, its error texts) are not strict JSON's.

mod bit;
mod cjson;
mod cmsgpack;
mod structs;

use mlua::{Lua, MultiValue, Value};

use super::ScriptError;

/// Sets the `bit`, `cjson`, `cmsgpack` and `struct` globals.
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.raw_set("bit", bit::library(lua)?)?;
    globals.raw_set("cjson", cjson::library(lua)?)?;
    globals.raw_set("cmsgpack", cmsgpack::library(lua)?)?;
    globals.raw_set("struct", structs::library(lua)?)?;
    Ok(())
}

/// A library function's error, as C's `luaL_error` raises it: the calling script's source
/// and line, then `message`.
pub(crate) fn lib_error(lua: &Lua, message: impl std::fmt::Display) -> mlua::Error {
    let place = lua.inspect_stack(1, |debug| {
        let source = debug.source().short_src.map(|s| s.into_owned());
        (source, debug.current_line())
    });
    let text = match place {
        Some((Some(source), Some(line))) => format!("ERR {source}:{line}: {message}"),
        _ => format!("ERR {message}"),
    };
    mlua::Error::external(ScriptError(text.into_bytes()))
}

/// Lua's name of a value's type, as error messages give it.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// Argument `i` (from 1) of `args` as a number, converting a numeric string as Lua's
/// `luaL_checknumber` does, or its error naming the function `name`.
pub(crate) fn check_number(
    lua: &Lua,
    args: &MultiValue,
    i: usize,
    name: &str,
) -> mlua::Result<f64> {
    let value = args.get(i - 1).cloned().unwrap_or(Value::Nil);
    let number = match &value {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        Value::String(_) => lua.coerce_number(value.clone())?,
        _ => None,
    };
    number.ok_or_else(|| {
        lib_error(
            lua,
            format!(
                "bad argument #{i} to '{name}' (number expected, got {})",
                if matches!(value, Value::String(_)) {
                    "string"
                } else {
                    type_name(&value)
                }
            ),
        )
    })
}

/// Argument `i` (from 1) as bytes (a number converted as Lua converts it), or its error.
pub(crate) fn check_string(
    lua: &Lua,
    args: &MultiValue,
    i: usize,
    name: &str,
) -> mlua::Result<Vec<u8>> {
    let value = args.get(i - 1).cloned().unwrap_or(Value::Nil);
    match &value {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        Value::Integer(_) | Value::Number(_) => Ok(lua
            .coerce_string(value.clone())?
            .map(|s| s.as_bytes().to_vec())
            .unwrap_or_default()),
        other => Err(lib_error(
            lua,
            format!(
                "bad argument #{i} to '{name}' (string expected, got {})",
                type_name(other)
            ),
        )),
    }
}

/// A Lua number's value (mlua gives integral numbers as integers).
pub(crate) fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// `n` as C's `printf("%.14g")` writes it (Lua's own number format).
pub(crate) fn format_g14(n: f64) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf" } else { "inf" }.into();
    }
    if n == 0.0 {
        return if n.is_sign_negative() { "-0" } else { "0" }.into();
    }
    const PRECISION: i32 = 14;
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, n);
    let (mantissa, exponent) = scientific.split_once('e').expect("an exponent");
    let exponent: i32 = exponent.parse().expect("a number");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if !(-4..PRECISION).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.abs())
    } else {
        let decimals = (PRECISION - 1 - exponent).max(0) as usize;
        trim(&format!("{n:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g14_matches_printf() {
        assert_eq!(format_g14(1.5), "1.5");
        assert_eq!(format_g14(0.1), "0.1");
        assert_eq!(format_g14(100.0), "100");
        assert_eq!(format_g14(1e20), "1e+20");
        assert_eq!(format_g14(2f64.powi(53)), "9.007199254741e+15");
        assert_eq!(format_g14(0.0001), "0.0001");
        assert_eq!(format_g14(0.00001), "1e-05");
        assert_eq!(format_g14(-0.0), "-0");
        assert_eq!(format_g14(123456789012345.0), "1.2345678901234e+14");
    }
}
