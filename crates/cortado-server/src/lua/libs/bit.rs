//! `bit`: LuaBitOp's functions on 32-bit integers (`tobit`, `tohex`, `bnot`, `band`, `bor`,
//! `bxor`, `lshift`, `rshift`, `arshift`, `rol`, `ror`, `bswap`).
//!
//! # Design
//!
//! A number becomes 32 bits as LuaBitOp makes it: added to 2^52 + 2^51, the double's low
//! 32 bits are the number modulo 2^32, rounded to even (so `tobit(2.5)` is 2, as in Redis).

use mlua::{Lua, MultiValue, Table};

use super::check_number;

/// LuaBitOp's normalization: `n` modulo 2^32, as a signed 32-bit number.
fn tobit(n: f64) -> i32 {
    (n + 6_755_399_441_055_744.0).to_bits() as u32 as i32
}

/// The `bit` table.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let unary = |name: &'static str, op: fn(i32) -> i32| {
        lua.create_function(move |lua, args: MultiValue| {
            Ok(f64::from(op(tobit(check_number(lua, &args, 1, name)?))))
        })
    };
    t.raw_set("tobit", unary("tobit", |x| x)?)?;
    t.raw_set("bnot", unary("bnot", |x| !x)?)?;
    t.raw_set("bswap", unary("bswap", i32::swap_bytes)?)?;
    let fold = |name: &'static str, op: fn(i32, i32) -> i32| {
        lua.create_function(move |lua, args: MultiValue| {
            let mut acc = tobit(check_number(lua, &args, 1, name)?);
            for i in 2..=args.len() {
                acc = op(acc, tobit(check_number(lua, &args, i, name)?));
            }
            Ok(f64::from(acc))
        })
    };
    t.raw_set("band", fold("band", |a, b| a & b)?)?;
    t.raw_set("bor", fold("bor", |a, b| a | b)?)?;
    t.raw_set("bxor", fold("bxor", |a, b| a ^ b)?)?;
    let shift = |name: &'static str, op: fn(u32, u32) -> u32| {
        lua.create_function(move |lua, args: MultiValue| {
            let x = tobit(check_number(lua, &args, 1, name)?) as u32;
            let n = tobit(check_number(lua, &args, 2, name)?) as u32 & 31;
            Ok(f64::from(op(x, n) as i32))
        })
    };
    t.raw_set("lshift", shift("lshift", |x, n| x << n)?)?;
    t.raw_set("rshift", shift("rshift", |x, n| x >> n)?)?;
    t.raw_set(
        "arshift",
        shift("arshift", |x, n| ((x as i32) >> n) as u32)?,
    )?;
    t.raw_set("rol", shift("rol", u32::rotate_left)?)?;
    t.raw_set("ror", shift("ror", u32::rotate_right)?)?;
    t.raw_set(
        "tohex",
        lua.create_function(|lua, args: MultiValue| {
            let x = tobit(check_number(lua, &args, 1, "tohex")?) as u32;
            let n = match args.get(1) {
                None | Some(mlua::Value::Nil) => 8,
                Some(_) => tobit(check_number(lua, &args, 2, "tohex")?),
            };
            let upper = n < 0;
            let digits = n.unsigned_abs().min(8) as usize;
            let hex = if upper {
                format!("{x:08X}")
            } else {
                format!("{x:08x}")
            };
            lua.create_string(&hex[8 - digits..])
        })?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::tobit;

    #[test]
    fn tobit_wraps_and_rounds_to_even() {
        assert_eq!(tobit(2f64.powi(32) + 5.0), 5);
        assert_eq!(tobit(1.5), 2);
        assert_eq!(tobit(2.5), 2);
        assert_eq!(tobit(-1.0), -1);
        assert_eq!(tobit(2f64.powi(31)), i32::MIN);
    }
}
