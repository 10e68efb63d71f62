//! `struct`: Roberto Ierusalimschy's `struct.pack`, `struct.unpack` and `struct.size`, as
//! Redis 7.0 ships them.
//!
//! Formats: `<`, `>`, `=` (little endian here) and `!n` (alignment, default 1: no padding),
//! `b`/`B` (1 byte), `h`/`H` (2), `l`/`L`, `j`/`J` and `T` (8), `i[n]`/`I[n]` (n bytes,
//! default 4), `f`, `d`, `s` (a zero-terminated string), `c[n]` (n bytes; `c0` packs a whole
//! string and unpacks as many bytes as the previous number said), `x` (a zero byte), and
//! spaces, ignored.

use mlua::{Lua, MultiValue, Table, Value};

use super::{check_number, check_string, lib_error};

/// One item of a format.
enum Item {
    /// An integer of this many bytes, signed or not.
    Int(usize, bool),
    Float,
    Double,
    /// A zero-terminated string.
    ZString,
    /// Fixed bytes (0: as long as given, or as the previous number).
    Chars(usize),
    Padding,
}

/// A format's items with their alignment and byte order, or the error of a bad option.
fn parse(format: &[u8]) -> Result<Vec<(Item, usize, bool)>, String> {
    let mut items = Vec::new();
    let (mut little, mut align) = (true, 1usize);
    let mut i = 0;
    let number = |i: &mut usize| -> Option<usize> {
        let start = *i;
        while *i < format.len() && format[*i].is_ascii_digit() {
            *i += 1;
        }
        std::str::from_utf8(&format[start..*i]).ok()?.parse().ok()
    };
    while i < format.len() {
        let option = format[i];
        i += 1;
        let item = match option {
            b' ' => continue,
            b'<' | b'=' => {
                little = true;
                continue;
            }
            b'>' => {
                little = false;
                continue;
            }
            b'!' => {
                align = number(&mut i).unwrap_or(8);
                continue;
            }
            b'b' | b'B' => Item::Int(1, option == b'b'),
            b'h' | b'H' => Item::Int(2, option == b'h'),
            b'l' | b'L' | b'j' | b'J' | b'T' => Item::Int(8, option.is_ascii_lowercase()),
            b'i' | b'I' => {
                let size = number(&mut i).unwrap_or(4);
                if !(1..=8).contains(&size) {
                    return Err(format!("integral size {size} is larger than limit of 8"));
                }
                Item::Int(size, option == b'i')
            }
            b'f' => Item::Float,
            b'd' => Item::Double,
            b's' => Item::ZString,
            b'c' => Item::Chars(number(&mut i).unwrap_or(1)),
            b'x' => Item::Padding,
            other => return Err(format!("invalid format option '{}'", other as char)),
        };
        items.push((item, align, little));
    }
    Ok(items)
}

/// [`parse`] for the function `name`, its error as Lua's argument error.
fn parse_for(lua: &Lua, format: &[u8], name: &str) -> mlua::Result<Vec<(Item, usize, bool)>> {
    parse(format).map_err(|e| lib_error(lua, format!("bad argument #1 to '{name}' ({e})")))
}

/// The padding before an item of `size` bytes at `offset`, under alignment `align`.
fn padding(offset: usize, size: usize, align: usize) -> usize {
    let a = size.min(align);
    if a <= 1 || !a.is_power_of_two() {
        return 0;
    }
    (a - offset % a) % a
}

fn item_size(item: &Item) -> usize {
    match item {
        Item::Int(n, _) => *n,
        Item::Float => 4,
        Item::Double => 8,
        Item::Chars(n) => *n,
        Item::Padding => 1,
        Item::ZString => 0,
    }
}

/// The `struct` table.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("pack", lua.create_function(pack)?)?;
    t.raw_set("unpack", lua.create_function(unpack)?)?;
    t.raw_set(
        "size",
        lua.create_function(|lua, args: MultiValue| {
            let format = check_string(lua, &args, 1, "size")?;
            let mut size = 0;
            for (item, align, _) in parse_for(lua, &format, "size")? {
                let unsized_option = match item {
                    Item::ZString => "s",
                    Item::Chars(0) => "c0",
                    _ => "",
                };
                if !unsized_option.is_empty() {
                    return Err(lib_error(
                        lua,
                        format!("bad argument #1 to 'size' (option '{unsized_option}' has no fixed size)"),
                    ));
                }
                let n = item_size(&item);
                size += padding(size, n, align) + n;
            }
            Ok(size as f64)
        })?,
    )?;
    Ok(t)
}

fn pack(lua: &Lua, args: MultiValue) -> mlua::Result<mlua::String> {
    let format = check_string(lua, &args, 1, "pack")?;
    let mut out: Vec<u8> = Vec::new();
    let mut arg = 2;
    for (item, align, little) in parse_for(lua, &format, "pack")? {
        let n = item_size(&item);
        out.resize(out.len() + padding(out.len(), n, align), 0);
        let mut bytes = |mut raw: Vec<u8>| {
            if !little {
                raw.reverse();
            }
            out.extend_from_slice(&raw);
        };
        match item {
            Item::Int(size, _) => {
                let v = check_number(lua, &args, arg, "pack")?;
                arg += 1;
                let v = if v < 0.0 { v as i64 as u64 } else { v as u64 };
                bytes(v.to_le_bytes()[..size].to_vec());
            }
            Item::Float => {
                let v = check_number(lua, &args, arg, "pack")? as f32;
                arg += 1;
                bytes(v.to_le_bytes().to_vec());
            }
            Item::Double => {
                let v = check_number(lua, &args, arg, "pack")?;
                arg += 1;
                bytes(v.to_le_bytes().to_vec());
            }
            Item::ZString => {
                let s = check_string(lua, &args, arg, "pack")?;
                arg += 1;
                out.extend_from_slice(&s);
                out.push(0);
            }
            Item::Chars(size) => {
                let s = check_string(lua, &args, arg, "pack")?;
                arg += 1;
                let size = if size == 0 { s.len() } else { size };
                if s.len() < size {
                    return Err(lib_error(
                        lua,
                        format!("bad argument #{} to 'pack' (string too short)", arg - 1),
                    ));
                }
                out.extend_from_slice(&s[..size]);
            }
            Item::Padding => out.push(0),
        }
    }
    lua.create_string(out)
}

fn unpack(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let format = check_string(lua, &args, 1, "unpack")?;
    let data = check_string(lua, &args, 2, "unpack")?;
    let mut at = match args.get(2) {
        None | Some(Value::Nil) => 0,
        Some(_) => (check_number(lua, &args, 3, "unpack")? as usize).saturating_sub(1),
    };
    let too_short = || lib_error(lua, "bad argument #2 to 'unpack' (data string too short)");
    let mut values = MultiValue::new();
    let mut last_number = 0f64;
    for (item, align, little) in parse_for(lua, &format, "unpack")? {
        let n = item_size(&item);
        at += padding(at, n, align);
        let mut raw = |size: usize| -> mlua::Result<Vec<u8>> {
            let mut b = data.get(at..at + size).ok_or_else(too_short)?.to_vec();
            at += size;
            if !little {
                b.reverse();
            }
            Ok(b)
        };
        let value = match item {
            Item::Int(size, signed) => {
                let b = raw(size)?;
                let mut le = [0u8; 8];
                le[..size].copy_from_slice(&b);
                let v = u64::from_le_bytes(le);
                let shift = 64 - 8 * size as u32;
                last_number = if signed {
                    ((v << shift) as i64 >> shift) as f64
                } else {
                    v as f64
                };
                Value::Number(last_number)
            }
            Item::Float => {
                let b = raw(4)?;
                Value::Number(f64::from(f32::from_le_bytes(
                    b.try_into().expect("4 bytes"),
                )))
            }
            Item::Double => {
                let b = raw(8)?;
                Value::Number(f64::from_le_bytes(b.try_into().expect("8 bytes")))
            }
            Item::ZString => {
                let rest = data.get(at..).ok_or_else(too_short)?;
                let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
                    lib_error(
                        lua,
                        "bad argument #2 to 'unpack' (unfinished string in data)",
                    )
                })?;
                let s = lua.create_string(&rest[..end])?;
                at += end + 1;
                Value::String(s)
            }
            Item::Chars(size) => {
                let size = if size == 0 {
                    last_number as usize
                } else {
                    size
                };
                let s = data.get(at..at + size).ok_or_else(too_short)?;
                at += size;
                Value::String(lua.create_string(s)?)
            }
            Item::Padding => {
                at += 1;
                continue;
            }
        };
        values.push_back(value);
    }
    values.push_back(Value::Number((at + 1) as f64));
    Ok(values)
}
