//! The `bit`, `cjson`, `cmsgpack` and `struct` libraries against `redis-server`: the same
//! scripts on each, every reply compared frame by frame.

use crate::common::compare::{assert_same_replies, Pair};

const SCRIPTS: &[&str] = &[
    "return bit.band(nil)",
    "return bit.tohex(-1)",
    "return bit.tohex(255, -4)",
    "return bit.tobit(2^32+5)",
    "return bit.tobit(1.5)",
    "return bit.tobit(2.5)",
    "return {bit.band(0xff, 0x0f, 0x3), bit.bor(1,2,4), bit.bxor(5,1), bit.bnot(0), bit.lshift(1, 33), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 12), bit.ror(0x12345678, 12), bit.bswap(0x12345678), bit.tohex(0x12345678, 3)}",
    "return bit.band('3', 1)",
    "return cjson.encode({1,2,3})",
    "return cjson.encode({a=1})",
    "return cjson.encode({a={b=true, c=cjson.null}})",
    "return cjson.encode('he\"l/lo\\n\\1')",
    "return cjson.encode({1.5, 0.1, 1e20, 100, -0.0, 2^53, 123456789012345})",
    "return cjson.encode({})",
    "return cjson.encode({[1]=1,[3]=3})",
    "return cjson.encode({[1]=1,[30]=3})",
    "return cjson.encode(function() end)",
    "return cjson.encode(1/0)",
    "return cjson.encode({1, nil, 3})",
    "return cjson.encode({['1']=1})",
    "return cjson.encode({[1]='a', b='c'})",
    "return cjson.decode('[1,2,{\"a\":null}]')[3].a == cjson.null",
    "return cjson.decode('{\"a\":[1,2.5,\"x\",true]}').a[3]",
    "return cjson.decode('bad')",
    "return cjson.encode(cjson.decode('{\"a\":{}}'))",
    "return type(cjson.decode('[1]'))",
    "return cjson.decode('1e2')",
    // lua-cjson's reading: its error texts, `strtod`'s numbers, bytes as they are.
    "return cjson.decode('{bad')",
    "return cjson.decode('[1,2')",
    "return cjson.decode('')",
    "return cjson.decode('nul')",
    "return cjson.decode('tru')",
    "return cjson.decode('{\"a\":1,}')",
    "return cjson.decode('{\"a\" 1}')",
    "return cjson.decode('{1:2}')",
    "return cjson.decode('[1] x')",
    "return cjson.decode('[1}')",
    "return cjson.decode('1e')",
    "return cjson.decode('-')",
    "return cjson.decode('.5')",
    "return cjson.decode('\"abc')",
    "return cjson.decode('\"a\\\\qb\"')",
    "return cjson.decode('\"\\\\u00\"')",
    "return cjson.decode('\"\\\\ud800\"')",
    "return cjson.decode('\"\\\\udc00\"')",
    "return cjson.decode('\"\\\\ud83d\\\\ude00 \\\\u00e9 \\\\u0041\"')",
    "return cjson.decode('\"\\\\/\\\\b\\\\f\\\\n\\\\r\\\\t\"')",
    "return cjson.decode('\"\\255\\1\"')",
    "return cjson.decode('[1]\\0 junk')[1]",
    "return cjson.decode('0x10')",
    "return cjson.decode('0123')",
    "return {cjson.decode('[1.5e1, -0.25, 1E+2, 0x1p4, 0X.8]')}",
    "return tostring(cjson.decode('inf')) .. tostring(cjson.decode('-Infinity'))",
    "return tostring(cjson.decode('nan'))",
    "return cjson.decode(' [ ] ')[1] == nil",
    "return cjson.decode(string.rep('[', 1001))",
    "return #cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000))",
    "return cjson.decode('{\"a\":1,\"a\":2}').a",
    "return cjson.decode('truex')",
    "return cjson.decode(1)",
    "return cmsgpack.pack(1, 'a', {1,2}, {x=1}, true, nil, 1.5)",
    "return cmsgpack.pack(-1, 128, -33, 70000, 2^40, 'x', 0.1, -2^40)",
    "return cmsgpack.pack(string.rep('x', 40), string.rep('y', 300))",
    "return cmsgpack.unpack(cmsgpack.pack({1,'two',{3}}))",
    "return {cmsgpack.unpack(cmsgpack.pack(1,2,3))}",
    "return {cmsgpack.unpack(cmsgpack.pack(-1, 128, -33, 70000, 2^40, 'x', true))}",
    "return cmsgpack.unpack(cmsgpack.pack({a = {b = 'c'}})).a.b",
    "return struct.pack('>I2i4', 258, -1)",
    "return {struct.unpack('>I2i4', struct.pack('>I2i4', 258, -1))}",
    "return struct.size('>I2i4')",
    "return struct.pack('<hBc3', -2, 255, 'abc')",
    "return {struct.unpack('<hBc3', struct.pack('<hBc3', -2, 255, 'abc'))}",
    "return {struct.unpack('>bBhHlLi3I3', struct.pack('>bBhHlLi3I3', -1, 255, -300, 65000, -5, 7, -70000, 70000))}",
    "return struct.pack('sxc0', 'hi', 'rest')",
    "return {struct.unpack('s', 'hi\\0')}",
    "return {struct.unpack('B', 'abc', 2)}",
    "return struct.size('!4bi')",
    "return struct.pack('y')",
    "return struct.size('s')",
    "bit.x = 1",
];

#[test]
fn script_libraries_match_redis() {
    let Some(pair) = Pair::start(&[]) else {
        return;
    };
    let (mut redis, mut ours) = pair.clients();
    let commands: Vec<[&str; 3]> = SCRIPTS.iter().map(|s| ["EVAL", *s, "0"]).collect();
    let commands: Vec<&[&str]> = commands.iter().map(|c| c.as_slice()).collect();
    assert_same_replies(&mut redis, &mut ours, &commands);
}
