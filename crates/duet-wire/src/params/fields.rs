//! How some parameters decode beyond their type: read leniently where a client's mistake is
//! ignored, or with the message a mistake is answered with.

use serde::de::{DeserializeOwned, Error};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// A value read as `T` when it is one, and as absent when it is not.
pub(super) fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(T::deserialize(Value::deserialize(d)?).ok())
}

/// A string that is not empty.
pub(super) fn non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = String::deserialize(d)?;
    if text.is_empty() { Err(D::Error::custom("empty")) } else { Ok(text) }
}

/// A value that may be absent but not `null`.
pub(super) fn present<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Err(D::Error::custom("null")),
        value => T::deserialize(value).map(Some).map_err(D::Error::custom),
    }
}

/// An object whose values are strings, numbers and booleans taken as their text.
pub(super) fn string_arguments<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    let map = match Value::deserialize(d)? {
        Value::Null => return Ok(None),
        Value::Object(map) => map,
        _ => return Err(D::Error::custom("arguments must be an object")),
    };
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            Value::Number(_) | Value::Bool(_) => Ok((k, v.to_string())),
            _ => Err(D::Error::custom(format!("argument {k:?} must be a string"))),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// A string, else the message `refusal` makes of the value.
pub(super) fn string_or<'de, D: Deserializer<'de>>(d: D, refusal: fn(&Value) -> String) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        other => Err(D::Error::custom(refusal(&other))),
    }
}

/// An object read as `T`, else refused saying `refusal` (or taken as absent when there is
/// none); what `T` refuses inside it is said as it is.
pub(super) fn object_or<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
    refusal: Option<&str>,
) -> Result<Option<T>, D::Error> {
    match (Value::deserialize(d)?, refusal) {
        (value @ Value::Object(_), _) => T::deserialize(value).map(Some).map_err(D::Error::custom),
        (_, None) => Ok(None),
        (_, Some(refusal)) => Err(D::Error::custom(refusal)),
    }
}
