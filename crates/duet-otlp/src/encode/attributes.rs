//! Attributes: `opentelemetry.proto.common.v1.KeyValue` and `AnyValue`, the short string
//! attributes most spans carry written without a nested length to widen.

use super::protobuf::{bytes, int_value, key, message, string};
use opentelemetry::{Array, KeyValue, Value};
use prost::bytes::BufMut;
use prost::encoding::WireType;

/// Each of `attributes` as a `KeyValue` field numbered `tag`.
pub(super) fn attributes<'a>(buf: &mut Vec<u8>, tag: u32, attributes: impl IntoIterator<Item = &'a KeyValue>) {
    for attribute in attributes {
        key_value(buf, tag, attribute.key.as_str(), &attribute.value);
    }
}

/// An `opentelemetry.proto.common.v1.KeyValue` field.
pub(super) fn key_value(buf: &mut Vec<u8>, tag: u32, key: &str, value: &Value) {
    match value {
        Value::String(text) => string_attribute(buf, tag, key, text.as_str()),
        value => message(buf, tag, |buf| key_value_body(buf, key, |buf| any_value(buf, value))),
    }
}

/// A `KeyValue` field whose value is a string. Most attributes are short strings, written in
/// four copies, two of them four fixed bytes, as every length then takes one byte.
pub(super) fn string_attribute(buf: &mut Vec<u8>, tag: u32, key: &str, value: &str) {
    // The key's field, then the `AnyValue` field: its key and length, and its string field.
    let body = 2 + key.len() + 2 + 2 + value.len();
    if tag < 16 && !key.is_empty() && body < 0x80 {
        buf.reserve(2 + body);
        buf.extend_from_slice(&[(tag << 3) as u8 | 2, body as u8, 1 << 3 | 2, key.len() as u8]);
        buf.extend_from_slice(key.as_bytes());
        buf.extend_from_slice(&[2 << 3 | 2, (2 + value.len()) as u8, 1 << 3 | 2, value.len() as u8]);
        buf.extend_from_slice(value.as_bytes());
        return;
    }
    message(buf, tag, |buf| key_value_body(buf, key, |buf| string_value(buf, value)));
}

/// The fields of a `KeyValue`: its key, and its `AnyValue` written by `any_value`.
fn key_value_body(buf: &mut Vec<u8>, key: &str, any_value: impl FnOnce(&mut Vec<u8>)) {
    string(buf, 1, key);
    message(buf, 2, any_value);
}

/// The `string_value` of an `AnyValue`.
fn string_value(buf: &mut Vec<u8>, value: &str) {
    bytes(buf, 1, value.as_bytes());
}

/// `opentelemetry.proto.common.v1.AnyValue`: one field of its `oneof`, written even when it
/// holds the default (an empty string, `false`, 0). A kind of value newer than this code
/// is written as an empty `AnyValue`.
fn any_value(buf: &mut Vec<u8>, value: &Value) {
    match value {
        Value::String(v) => string_value(buf, v.as_str()),
        Value::Bool(v) => int_value(buf, 2, u64::from(*v)),
        Value::I64(v) => int_value(buf, 3, *v as u64),
        Value::F64(v) => double_value(buf, *v),
        Value::Array(array) => message(buf, 5, |buf| match array {
            Array::Bool(vs) => vs.iter().for_each(|v| message(buf, 1, |buf| int_value(buf, 2, u64::from(*v)))),
            Array::I64(vs) => vs.iter().for_each(|v| message(buf, 1, |buf| int_value(buf, 3, *v as u64))),
            Array::F64(vs) => vs.iter().for_each(|v| message(buf, 1, |buf| double_value(buf, *v))),
            Array::String(vs) => vs.iter().for_each(|v| message(buf, 1, |buf| string_value(buf, v.as_str()))),
            _ => {}
        }),
        _ => {}
    }
}

fn double_value(buf: &mut Vec<u8>, value: f64) {
    key(buf, 4, WireType::SixtyFourBit);
    buf.put_f64_le(value);
}
