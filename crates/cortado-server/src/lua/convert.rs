//! Redis 7.0's conversions between replies and Lua values, both ways.
//!
//! A command's reply becomes: an integer a number, a bulk string a string, a RESP2 null
//! `false` (RESP3's null `nil`), an array a table, a status `{ok = ...}`, an error
//! `{err = ...}`, and under `redis.setresp(3)` a map `{map = {...}}`, a set
//! `{set = {k = true}}`, a double `{double = n}`, a boolean a boolean, a big number
//! `{big_number = s}`, a verbatim string `{verbatim_string = {format = f, string = s}}`.
//! A script's value becomes: a number an integer (truncated), a string a bulk string, `true`
//! the integer 1 (a RESP3 boolean under `setresp(3)`), `false` and `nil` a null, a table with
//! `err` an error, with `ok` a status, with `double`, `map`, `set`, `big_number` or
//! `verbatim_string` those types, and any other table an array of its elements up to the
//! first `nil`.
//!
//! # Design
//!
//! Replies are parsed from the bytes the command wrote, so every command's reply converts
//! without a second reply path. A script's value deeper than [`MAX_DEPTH`] (a table that
//! holds itself) becomes an error there, as Redis's "reached lua stack limit".

use mlua::{Lua, Table, Value};

use crate::protocol::Reply;

/// How deep a script's returned tables may nest (Redis stops at its Lua stack's limit).
pub const MAX_DEPTH: usize = 1000;

/// Parses one reply from `bytes` at `*at` into a Lua value; `Err` holds a top-level error's
/// text (without the `-`).
pub fn reply_to_lua(lua: &Lua, bytes: &[u8], at: &mut usize) -> mlua::Result<Value> {
    let kind = bytes.get(*at).copied().unwrap_or(b'_');
    *at += 1;
    let line = read_line(bytes, at);
    Ok(match kind {
        b':' => Value::Number(parse_i64(line) as f64),
        b'$' | b'=' | b'!' => {
            let Ok(len) = usize::try_from(parse_i64(line)) else {
                return Ok(Value::Boolean(false));
            };
            let data = &bytes[*at..(*at + len).min(bytes.len())];
            *at += len + 2;
            if kind == b'=' && data.len() >= 4 {
                let inner = lua.create_table()?;
                inner.raw_set("format", lua.create_string(&data[..3])?)?;
                inner.raw_set("string", lua.create_string(&data[4..])?)?;
                let t = lua.create_table()?;
                t.raw_set("verbatim_string", inner)?;
                Value::Table(t)
            } else if kind == b'!' {
                field(lua, "err", Value::String(lua.create_string(data)?))?
            } else {
                Value::String(lua.create_string(data)?)
            }
        }
        b'+' => field(lua, "ok", Value::String(lua.create_string(line)?))?,
        b'-' => field(lua, "err", Value::String(lua.create_string(line)?))?,
        b'*' | b'>' => {
            let Ok(n) = usize::try_from(parse_i64(line)) else {
                return Ok(Value::Boolean(false));
            };
            let t = lua.create_table_with_capacity(n, 0)?;
            for i in 0..n {
                t.raw_set(i + 1, reply_to_lua(lua, bytes, at)?)?;
            }
            Value::Table(t)
        }
        b'%' | b'~' => {
            let n = usize::try_from(parse_i64(line)).unwrap_or(0);
            let inner = lua.create_table()?;
            for _ in 0..n {
                let k = reply_to_lua(lua, bytes, at)?;
                let v = if kind == b'%' {
                    reply_to_lua(lua, bytes, at)?
                } else {
                    Value::Boolean(true)
                };
                inner.raw_set(k, v)?;
            }
            field(
                lua,
                if kind == b'%' { "map" } else { "set" },
                Value::Table(inner),
            )?
        }
        b'|' => {
            // An attribute is skipped; the reply it describes follows.
            let n = usize::try_from(parse_i64(line)).unwrap_or(0);
            for _ in 0..2 * n {
                reply_to_lua(lua, bytes, at)?;
            }
            reply_to_lua(lua, bytes, at)?
        }
        b',' => {
            let d = std::str::from_utf8(line)
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                .unwrap_or(f64::NAN);
            field(lua, "double", Value::Number(d))?
        }
        b'#' => Value::Boolean(line == b"t"),
        b'(' => field(lua, "big_number", Value::String(lua.create_string(line)?))?,
        _ => Value::Nil,
    })
}

fn field(lua: &Lua, name: &str, value: Value) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(name, value)?;
    Ok(Value::Table(t))
}

fn read_line<'b>(bytes: &'b [u8], at: &mut usize) -> &'b [u8] {
    let start = (*at).min(bytes.len());
    let end = bytes[start..]
        .windows(2)
        .position(|w| w == b"\r\n")
        .map_or(bytes.len(), |p| start + p);
    *at = end + 2;
    &bytes[start..end]
}

fn parse_i64(bytes: &[u8]) -> i64 {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Writes a script's value to `reply`; `resp3` is the script's `redis.setresp` (whether
/// booleans are RESP3's).
pub fn lua_to_reply(value: &Value, reply: &mut Reply, resp3: bool, depth: usize) {
    if depth > MAX_DEPTH {
        reply.error_bytes(b"ERR reached lua stack limit");
        return;
    }
    match value {
        Value::String(s) => reply.bulk(&s.as_bytes()),
        Value::Boolean(b) => {
            if resp3 {
                reply.boolean(*b);
            } else if *b {
                reply.int(1);
            } else {
                reply.null();
            }
        }
        Value::Integer(n) => reply.int(*n),
        Value::Number(n) => reply.int(*n as i64),
        Value::Table(t) => table_to_reply(t, reply, resp3, depth),
        _ => reply.null(),
    }
}

/// Replaces CR and LF with spaces, as Redis writes status and error replies.
pub fn one_line(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}

fn table_to_reply(t: &Table, reply: &mut Reply, resp3: bool, depth: usize) {
    if let Ok(Value::String(err)) = t.raw_get::<Value>("err") {
        reply.error_bytes(&one_line(&err.as_bytes()));
        return;
    }
    if let Ok(Value::String(ok)) = t.raw_get::<Value>("ok") {
        let text = one_line(&ok.as_bytes());
        reply.simple(&String::from_utf8_lossy(&text));
        return;
    }
    if let Ok(Value::Number(d)) = t.raw_get::<Value>("double") {
        reply.double(d);
        return;
    }
    if let Ok(Value::Table(map)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = map.pairs().filter_map(Result::ok).collect();
        reply.map(pairs.len());
        for (k, v) in &pairs {
            lua_to_reply(k, reply, resp3, depth + 1);
            lua_to_reply(v, reply, resp3, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(set)) = t.raw_get::<Value>("set") {
        let keys: Vec<Value> = set
            .pairs::<Value, Value>()
            .filter_map(|p| p.ok().map(|(k, _)| k))
            .collect();
        reply.set(keys.len());
        for k in &keys {
            lua_to_reply(k, reply, resp3, depth + 1);
        }
        return;
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    reply.array(items.len());
    for item in &items {
        lua_to_reply(item, reply, resp3, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_bytes(lua: &Lua, code: &str) -> Vec<u8> {
        let value: Value = lua.load(code).eval().unwrap();
        let mut reply = Reply::new();
        lua_to_reply(&value, &mut reply, false, 0);
        reply.bytes().to_vec()
    }

    #[test]
    fn lua_to_reply_converts_each_type_as_redis() {
        let lua = Lua::new();
        assert_eq!(to_bytes(&lua, "return 3.99"), b":3\r\n");
        assert_eq!(to_bytes(&lua, "return -3.99"), b":-3\r\n");
        assert_eq!(to_bytes(&lua, "return 'x'"), b"$1\r\nx\r\n");
        assert_eq!(to_bytes(&lua, "return true"), b":1\r\n");
        assert_eq!(to_bytes(&lua, "return false"), b"$-1\r\n");
        assert_eq!(to_bytes(&lua, "return nil"), b"$-1\r\n");
        assert_eq!(to_bytes(&lua, "return {1,2,nil,4}"), b"*2\r\n:1\r\n:2\r\n");
        assert_eq!(to_bytes(&lua, "return {ok='a\\nb'}"), b"+a b\r\n");
        assert_eq!(to_bytes(&lua, "return {err='X y', ok='z'}"), b"-X y\r\n");
        assert_eq!(to_bytes(&lua, "return {double=1.5}"), b"$3\r\n1.5\r\n");
    }

    #[test]
    fn lua_to_reply_self_holding_table_stops_with_an_error() {
        let lua = Lua::new();
        let bytes = to_bytes(&lua, "local t = {} t[1] = t return t");
        assert!(bytes.ends_with(b"-ERR reached lua stack limit\r\n"));
    }

    #[test]
    fn reply_to_lua_converts_each_type_as_redis() {
        let lua = Lua::new();
        let bytes = b"*6\r\n:7\r\n$2\r\nab\r\n$-1\r\n+OK\r\n-ERR bad\r\n*-1\r\n";
        let mut at = 0;
        let value = reply_to_lua(&lua, bytes, &mut at).unwrap();
        assert_eq!(at, bytes.len());
        lua.globals().set("v", value).unwrap();
        let check: bool = lua
            .load(
                "return v[1] == 7 and v[2] == 'ab' and v[3] == false and v[4].ok == 'OK' \
                 and v[5].err == 'ERR bad' and v[6] == false",
            )
            .eval()
            .unwrap();
        assert!(check);
    }

    #[test]
    fn reply_to_lua_converts_resp3_types() {
        let lua = Lua::new();
        let bytes = b"*5\r\n%1\r\n$1\r\nk\r\n:1\r\n~1\r\n$1\r\nm\r\n,2.5\r\n#t\r\n_\r\n";
        let mut at = 0;
        let value = reply_to_lua(&lua, bytes, &mut at).unwrap();
        lua.globals().set("v", value).unwrap();
        let check: bool = lua
            .load("return v[1].map.k == 1 and v[2].set.m == true and v[3].double == 2.5 and v[4] == true and v[5] == nil")
            .eval()
            .unwrap();
        assert!(check);
    }
}
