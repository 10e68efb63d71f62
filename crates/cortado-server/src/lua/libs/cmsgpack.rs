//! `cmsgpack`: lua-cmsgpack's `pack` and `unpack`, as Redis 7.0 ships them, over the `rmp`
//! crate's MessagePack encodings.
//!
//! `pack(...)` concatenates each argument's encoding: an integral number in the smallest
//! integer format, any other as a 32-bit float when that loses nothing (else 64-bit), a
//! string as `str`, a table whose keys are exactly 1..n as an array (any other as a map),
//! and what MessagePack cannot hold (functions) as nil. `unpack` returns every value encoded
//! in its argument (binary strings as Lua strings).

use mlua::{Lua, MultiValue, Table, Value};
use rmp::Marker;

use super::{as_number, check_string, lib_error};

/// How deep tables are packed (lua-cmsgpack's `LUACMSGPACK_MAX_NESTING`); deeper ones pack
/// as nil.
const MAX_NESTING: usize = 16;

/// The `cmsgpack` table.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            if args.is_empty() {
                return Err(lib_error(lua, "MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for value in &args {
                pack(value, &mut out, 0).map_err(|e| lib_error(lua, e))?;
            }
            lua.create_string(out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, args: MultiValue| {
            let bytes = check_string(lua, &args, 1, "unpack")?;
            let mut at = 0;
            let mut values = MultiValue::new();
            while at < bytes.len() {
                values.push_back(unpack(lua, &bytes, &mut at)?);
            }
            Ok(values)
        })?,
    )?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    Ok(t)
}

fn pack(value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    let io = |e: rmp::encode::ValueWriteError| e.to_string();
    match value {
        Value::Boolean(b) => rmp::encode::write_bool(out, *b).map_err(|e| e.to_string())?,
        Value::Integer(_) | Value::Number(_) => {
            let n = as_number(value).expect("a number");
            if n.fract() == 0.0 && n >= -(2f64.powi(63)) && n < 2f64.powi(64) {
                if n >= 0.0 {
                    rmp::encode::write_uint(out, n as u64).map_err(io)?;
                } else {
                    rmp::encode::write_sint(out, n as i64).map_err(io)?;
                }
            } else if f64::from(n as f32) == n || n.is_nan() {
                rmp::encode::write_f32(out, n as f32).map_err(io)?;
            } else {
                rmp::encode::write_f64(out, n).map_err(io)?;
            }
        }
        Value::String(s) => {
            let bytes = s.as_bytes();
            rmp::encode::write_str_len(out, bytes.len() as u32).map_err(io)?;
            out.extend_from_slice(&bytes);
        }
        Value::Table(t) if depth < MAX_NESTING => pack_table(t, out, depth + 1)?,
        _ => rmp::encode::write_nil(out).map_err(|e| e.to_string())?,
    }
    Ok(())
}

fn pack_table(t: &Table, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    let io = |e: rmp::encode::ValueWriteError| e.to_string();
    let mut pairs = Vec::new();
    let (mut max, mut is_array) = (0usize, true);
    for pair in t.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(|e| e.to_string())?;
        match as_number(&key) {
            Some(k) if k >= 1.0 && k.fract() == 0.0 => max = max.max(k as usize),
            _ => is_array = false,
        }
        pairs.push((key, value));
    }
    if is_array && max == pairs.len() {
        rmp::encode::write_array_len(out, max as u32).map_err(io)?;
        for i in 1..=max {
            let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            pack(&v, out, depth)?;
        }
    } else {
        rmp::encode::write_map_len(out, pairs.len() as u32).map_err(io)?;
        for (k, v) in &pairs {
            pack(k, out, depth)?;
            pack(v, out, depth)?;
        }
    }
    Ok(())
}

/// The bytes `n` at `*at`, moving past them, or lua-cmsgpack's error.
fn take<'b>(lua: &Lua, bytes: &'b [u8], at: &mut usize, n: usize) -> mlua::Result<&'b [u8]> {
    let part = bytes
        .get(*at..at.saturating_add(n))
        .ok_or_else(|| lib_error(lua, "Missing bytes in input."))?;
    *at += n;
    Ok(part)
}

/// A big-endian unsigned number of `n` bytes at `*at`.
fn be(lua: &Lua, bytes: &[u8], at: &mut usize, n: usize) -> mlua::Result<u64> {
    Ok(take(lua, bytes, at, n)?
        .iter()
        .fold(0u64, |acc, &b| acc << 8 | u64::from(b)))
}

fn unpack(lua: &Lua, bytes: &[u8], at: &mut usize) -> mlua::Result<Value> {
    let marker = Marker::from_u8(take(lua, bytes, at, 1)?[0]);
    let string = |lua: &Lua, at: &mut usize, len: u64| -> mlua::Result<Value> {
        let s = take(lua, bytes, at, usize::try_from(len).unwrap_or(usize::MAX))?;
        Ok(Value::String(lua.create_string(s)?))
    };
    let number = |n: f64| Ok(Value::Number(n));
    match marker {
        Marker::Null => Ok(Value::Nil),
        Marker::True => Ok(Value::Boolean(true)),
        Marker::False => Ok(Value::Boolean(false)),
        Marker::FixPos(n) => number(f64::from(n)),
        Marker::FixNeg(n) => number(f64::from(n)),
        Marker::U8 => number(be(lua, bytes, at, 1)? as f64),
        Marker::U16 => number(be(lua, bytes, at, 2)? as f64),
        Marker::U32 => number(be(lua, bytes, at, 4)? as f64),
        Marker::U64 => number(be(lua, bytes, at, 8)? as f64),
        Marker::I8 => number(f64::from(be(lua, bytes, at, 1)? as u8 as i8)),
        Marker::I16 => number(f64::from(be(lua, bytes, at, 2)? as u16 as i16)),
        Marker::I32 => number(f64::from(be(lua, bytes, at, 4)? as u32 as i32)),
        Marker::I64 => number(be(lua, bytes, at, 8)? as i64 as f64),
        Marker::F32 => number(f64::from(f32::from_bits(be(lua, bytes, at, 4)? as u32))),
        Marker::F64 => number(f64::from_bits(be(lua, bytes, at, 8)?)),
        Marker::FixStr(n) => string(lua, at, u64::from(n)),
        Marker::Str8 | Marker::Bin8 => {
            let n = be(lua, bytes, at, 1)?;
            string(lua, at, n)
        }
        Marker::Str16 | Marker::Bin16 => {
            let n = be(lua, bytes, at, 2)?;
            string(lua, at, n)
        }
        Marker::Str32 | Marker::Bin32 => {
            let n = be(lua, bytes, at, 4)?;
            string(lua, at, n)
        }
        Marker::FixArray(n) => array(lua, bytes, at, u64::from(n)),
        Marker::Array16 => {
            let n = be(lua, bytes, at, 2)?;
            array(lua, bytes, at, n)
        }
        Marker::Array32 => {
            let n = be(lua, bytes, at, 4)?;
            array(lua, bytes, at, n)
        }
        Marker::FixMap(n) => map(lua, bytes, at, u64::from(n)),
        Marker::Map16 => {
            let n = be(lua, bytes, at, 2)?;
            map(lua, bytes, at, n)
        }
        Marker::Map32 => {
            let n = be(lua, bytes, at, 4)?;
            map(lua, bytes, at, n)
        }
        _ => Err(lib_error(lua, "Bad data format in input.")),
    }
}

fn array(lua: &Lua, bytes: &[u8], at: &mut usize, n: u64) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for i in 1..=n {
        t.raw_set(i, unpack(lua, bytes, at)?)?;
    }
    Ok(Value::Table(t))
}

fn map(lua: &Lua, bytes: &[u8], at: &mut usize, n: u64) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for _ in 0..n {
        let k = unpack(lua, bytes, at)?;
        let v = unpack(lua, bytes, at)?;
        if !matches!(k, Value::Nil) {
            t.raw_set(k, v)?;
        }
    }
    Ok(Value::Table(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(lua: &Lua, code: &str) -> Vec<u8> {
        let v: Value = lua.load(code).eval().unwrap();
        let mut out = Vec::new();
        pack(&v, &mut out, 0).unwrap();
        out
    }

    #[test]
    fn pack_picks_lua_cmsgpack_formats() {
        let lua = Lua::new();
        assert_eq!(packed(&lua, "return 1"), b"\x01");
        assert_eq!(packed(&lua, "return -1"), b"\xff");
        assert_eq!(packed(&lua, "return 128"), b"\xcc\x80");
        assert_eq!(packed(&lua, "return -33"), b"\xd0\xdf");
        assert_eq!(packed(&lua, "return 70000"), b"\xce\x00\x01\x11\x70");
        assert_eq!(packed(&lua, "return 1.5"), b"\xca\x3f\xc0\x00\x00");
        assert_eq!(packed(&lua, "return {1, 2}"), b"\x92\x01\x02");
        assert_eq!(packed(&lua, "return {x = 1}"), b"\x81\xa1x\x01");
    }
}
