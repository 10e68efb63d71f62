//! `cjson`: lua-cjson's `encode`, `decode` and `null`, as Redis 7.0 ships them.
//!
//! `encode` writes numbers as `%.14g`, escapes `"`, `\`, `/` and control characters, writes a
//! table whose keys are all positive integers as an array (holes as `null`; refused as
//! "excessively sparse" past twice its entries and 10) and any other as an object, and
//! refuses functions, NaN and infinities with lua-cjson's errors. `decode` parses with
//! `serde_json`; its errors give lua-cjson's first words and `serde_json`'s position, not
//! lua-cjson's exact text.

use mlua::{LightUserData, Lua, MultiValue, Table, Value};

use super::{as_number, check_string, format_g14, lib_error, type_name};

/// How deep tables may nest (lua-cjson's default `encode_max_depth` and `decode_max_depth`).
const MAX_DEPTH: usize = 1000;

/// `cjson.null`: a light userdata holding a null pointer, as lua-cjson's.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// The `cjson` table.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "encode",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(lib_error(
                    lua,
                    "bad argument #1 to 'encode' (expected 1 argument)",
                ));
            }
            let mut out = Vec::new();
            encode(&args[0], &mut out, 0).map_err(|e| lib_error(lua, e))?;
            lua.create_string(out)
        })?,
    )?;
    t.raw_set(
        "decode",
        lua.create_function(|lua, args: MultiValue| {
            let text = check_string(lua, &args, 1, "decode")?;
            let value: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
                lib_error(
                    lua,
                    format!(
                        "Expected value but found invalid token at character {}",
                        e.column().max(1)
                    ),
                )
            })?;
            to_lua(lua, &value, 0)
        })?,
    )?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

/// Writes `value` as JSON, or lua-cjson's error.
fn encode(value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    match value {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(_) | Value::Number(_) => {
            let n = as_number(value).expect("a number");
            if !n.is_finite() {
                return Err("Cannot serialise number: must not be NaN or Inf".into());
            }
            out.extend_from_slice(format_g14(n).as_bytes());
        }
        Value::String(s) => escape(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth >= MAX_DEPTH {
                return Err(format!(
                    "Cannot serialise, excessive nesting ({})",
                    depth + 1
                ));
            }
            encode_table(t, out, depth + 1)?;
        }
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                type_name(other)
            ))
        }
    }
    Ok(())
}

/// The length of `t` as an array (its largest key), or `None` if a key is not a positive
/// integer; lua-cjson's sparse-array error.
fn array_length(t: &Table) -> Result<Option<usize>, String> {
    let (mut max, mut items) = (0usize, 0usize);
    for pair in t.pairs::<Value, Value>() {
        let (key, _) = pair.map_err(|e| e.to_string())?;
        match as_number(&key) {
            Some(k) if k >= 1.0 && k.fract() == 0.0 && k < 1e15 => {
                max = max.max(k as usize);
                items += 1;
            }
            _ => return Ok(None),
        }
    }
    if max > items * 2 && max > 10 {
        return Err("Cannot serialise table: excessively sparse array".into());
    }
    Ok((items > 0).then_some(max))
}

fn encode_table(t: &Table, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    if let Some(len) = array_length(t)? {
        out.push(b'[');
        for i in 1..=len {
            if i > 1 {
                out.push(b',');
            }
            let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            encode(&v, out, depth)?;
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    let mut first = true;
    for pair in t.pairs::<Value, Value>() {
        let (key, v) = pair.map_err(|e| e.to_string())?;
        if !first {
            out.push(b',');
        }
        first = false;
        match &key {
            Value::String(s) => escape(&s.as_bytes(), out),
            Value::Integer(_) | Value::Number(_) => {
                let n = as_number(&key).expect("a number");
                escape(format_g14(n).as_bytes(), out);
            }
            _ => return Err("Cannot serialise table: table key must be a number or string".into()),
        }
        out.push(b':');
        encode(&v, out, depth)?;
    }
    out.push(b'}');
    Ok(())
}

/// A JSON string of `bytes`, escaped as lua-cjson escapes (bytes past ASCII as they are).
fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// A parsed JSON value as Lua: objects and arrays as tables, `null` as `cjson.null`.
fn to_lua(lua: &Lua, value: &serde_json::Value, depth: usize) -> mlua::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(lib_error(lua, "Found too many nested data structures"));
    }
    Ok(match value {
        serde_json::Value::Null => null(),
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::String(lua.create_string(s)?),
        serde_json::Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item, depth + 1)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, v) in map {
                t.raw_set(lua.create_string(k)?, to_lua(lua, v, depth + 1)?)?;
            }
            Value::Table(t)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(lua: &Lua, code: &str) -> String {
        let v: Value = lua.load(code).eval().unwrap();
        let mut out = Vec::new();
        match encode(&v, &mut out, 0) {
            Ok(()) => String::from_utf8(out).unwrap(),
            Err(e) => e,
        }
    }

    #[test]
    fn encode_matches_lua_cjson() {
        let lua = Lua::new();
        assert_eq!(encoded(&lua, "return {1, 2, 3}"), "[1,2,3]");
        assert_eq!(encoded(&lua, "return {a = 1}"), "{\"a\":1}");
        assert_eq!(encoded(&lua, "return 'he\"l/lo\\n'"), "\"he\\\"l\\/lo\\n\"");
        assert_eq!(encoded(&lua, "return {}"), "{}");
        assert_eq!(encoded(&lua, "return {[1] = 1, [3] = 3}"), "[1,null,3]");
        assert_eq!(
            encoded(&lua, "return {[1] = 1, [30] = 3}"),
            "Cannot serialise table: excessively sparse array"
        );
        assert_eq!(encoded(&lua, "return 2^53"), "9.007199254741e+15");
        assert_eq!(
            encoded(&lua, "return 1/0"),
            "Cannot serialise number: must not be NaN or Inf"
        );
        assert_eq!(
            encoded(&lua, "return print"),
            "Cannot serialise function: type not supported"
        );
    }
}
