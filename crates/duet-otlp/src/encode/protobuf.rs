//! The protobuf wire format's primitives the encoder writes with: fields' keys, varints,
//! length-delimited fields and nested messages written in place, on prost's encoding
//! functions.

use prost::bytes::BufMut;
use prost::encoding::{WireType, encode_varint, encoded_len_varint};

/// The key and length of a length-delimited field whose `len` bytes come next.
pub(super) fn length_delimited(buf: &mut Vec<u8>, tag: u32, len: usize) {
    key(buf, tag, WireType::LengthDelimited);
    varint(buf, len as u64);
}

/// The bytes a length-delimited field of `len` bytes takes, its key and length included.
pub(super) fn field_len(tag: u32, len: usize) -> usize {
    encoded_len_varint(u64::from(tag << 3 | WireType::LengthDelimited as u32)) + encoded_len_varint(len as u64) + len
}

/// A message field, its body written by `body` (an optional message is written only when
/// present, and every one a span has is).
pub(super) fn message(buf: &mut Vec<u8>, tag: u32, body: impl FnOnce(&mut Vec<u8>)) {
    key(buf, tag, WireType::LengthDelimited);
    let start = buf.len();
    buf.push(0);
    body(buf);
    let len = buf.len() - start - 1;
    if len < 0x80 {
        buf[start] = len as u8;
    } else {
        let width = encoded_len_varint(len as u64);
        buf.resize(buf.len() + width - 1, 0);
        buf.copy_within(start + 1..start + 1 + len, start + width);
        encode_varint(len as u64, &mut &mut buf[start..start + width]);
    }
}

/// A `bytes` or `string` field, written even when empty.
pub(super) fn bytes(buf: &mut Vec<u8>, tag: u32, value: &[u8]) {
    length_delimited(buf, tag, value.len());
    buf.extend_from_slice(value);
}

/// A `string` field, left out when empty as proto3 has it.
pub(super) fn string(buf: &mut Vec<u8>, tag: u32, value: &str) {
    if !value.is_empty() {
        bytes(buf, tag, value.as_bytes());
    }
}

/// A varint field (`bool`, `int64`, `uint32`, an enum), written even when 0.
pub(super) fn int_value(buf: &mut Vec<u8>, tag: u32, value: u64) {
    key(buf, tag, WireType::Varint);
    varint(buf, value);
}

/// A `uint32` or enum field, left out when 0.
pub(super) fn uint(buf: &mut Vec<u8>, tag: u32, value: u64) {
    if value != 0 {
        int_value(buf, tag, value);
    }
}

/// A `fixed64` field, left out when 0.
pub(super) fn fixed64(buf: &mut Vec<u8>, tag: u32, value: u64) {
    if value != 0 {
        key(buf, tag, WireType::SixtyFourBit);
        buf.put_u64_le(value);
    }
}

/// A field's key: one byte below tag 16.
#[inline]
pub(super) fn key(buf: &mut Vec<u8>, tag: u32, wire_type: WireType) {
    varint(buf, u64::from(tag << 3 | wire_type as u32));
}

/// A varint, with the one-byte case (most lengths, every key) written without a loop.
#[inline]
pub(super) fn varint(buf: &mut Vec<u8>, value: u64) {
    if value < 0x80 {
        buf.push(value as u8);
    } else {
        encode_varint(value, buf);
    }
}
