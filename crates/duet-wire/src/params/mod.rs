//! The params of each request a client sends, as plain data (`methods`), and the one step
//! that decodes them: a request's params are read into their method's struct once, and a
//! failure is one -32602 error naming the parameter that was missing or wrong. A client
//! builds the same structs and serializes them.

mod fields;
mod methods;
#[cfg(test)]
mod tests;

pub use methods::*;

use crate::jsonrpc::RpcError;
use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess};
use serde_json::{Map, Value};
use std::fmt;

/// The params of one method: what decoding them reads, and what a request whose params do
/// not decode is told.
pub trait Params: DeserializeOwned {
    /// The message of the -32602 error for params whose `field` is missing (`why` is
    /// `None`) or did not decode (`why` says how).
    fn refused(field: &str, why: Option<&serde_json::Error>) -> String {
        let _ = why;
        missing_or_invalid(field)
    }
}

/// What a request is told whose `field` is missing or wrong, unless its method says more.
fn missing_or_invalid(field: &str) -> String {
    format!("Missing or invalid parameter: {field}")
}

/// Decodes a request's params (less `_meta`) into `T`, taking them: what `T` holds is moved
/// out of them, not copied. Unknown parameters are ignored.
pub fn decode<T: Params>(params: Map<String, Value>) -> Result<T, RpcError> {
    let fields = Fields { entries: params.into_iter(), current: None };
    T::deserialize(MapAccessDeserializer::new(fields)).map_err(|refusal| {
        let message = match &refusal {
            Refusal::Missing(field) => T::refused(field, None),
            Refusal::Invalid { field, why } => T::refused(field, Some(why)),
            Refusal::Other(message) => message.clone(),
        };
        RpcError::invalid_params(message)
    })
}

/// Why params did not decode, by parameter.
#[derive(Debug)]
enum Refusal {
    /// A required parameter is absent.
    Missing(&'static str),
    /// A parameter's value did not decode.
    Invalid { field: String, why: serde_json::Error },
    /// Anything else the decoder says.
    Other(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Missing(field) => write!(f, "missing parameter {field}"),
            Refusal::Invalid { field, why } => write!(f, "invalid parameter {field}: {why}"),
            Refusal::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Refusal {}

impl de::Error for Refusal {
    fn custom<M: fmt::Display>(message: M) -> Self {
        Refusal::Other(message.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        Refusal::Missing(field)
    }
}

/// The params' entries, read one by one, each value's failure tagged with its name.
struct Fields {
    entries: serde_json::map::IntoIter,
    current: Option<(String, Value)>,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = Refusal;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Refusal> {
        let Some((name, value)) = self.entries.next() else { return Ok(None) };
        let key = seed.deserialize(StrDeserializer::new(&name))?;
        self.current = Some((name, value));
        Ok(Some(key))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Refusal> {
        let Some((field, value)) = self.current.take() else {
            return Err(Refusal::Other("a parameter's value was read before its name".into()));
        };
        seed.deserialize(value).map_err(|why| Refusal::Invalid { field, why })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}
