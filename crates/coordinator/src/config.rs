//! Reading a coordinator's settings from the broker's properties: the one error a bad value
//! gets ([`ConfigError`], naming the key and the value) and the readers of Kafka's INT, LONG
//! and SHORT keys with their `atLeast` validators, which the group and the transaction
//! coordinator's configs ([`GroupCoordinatorConfig`](crate::group::GroupCoordinatorConfig),
//! [`TransactionCoordinatorConfig`](crate::transaction::TransactionCoordinatorConfig)) both
//! parse with.

/// A setting that did not parse: the key, the value and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value {value:?} for {key}: {reason}")]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

/// One property as the file gives it, read as the type its key has in Kafka.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Property<'a> {
    key: &'a str,
    value: &'a str,
}

impl<'a> Property<'a> {
    pub(crate) fn new(key: &'a str, value: &'a str) -> Self {
        Property { key, value }
    }

    /// The error naming this property's key and value.
    pub(crate) fn invalid(&self, reason: &str) -> ConfigError {
        ConfigError {
            key: self.key.to_string(),
            value: self.value.to_string(),
            reason: reason.to_string(),
        }
    }

    /// A LONG of at least `min` (Kafka's `Range.atLeast`).
    pub(crate) fn long(&self, min: i64) -> Result<i64, ConfigError> {
        let v: i64 = self
            .value
            .trim()
            .parse()
            .map_err(|_| self.invalid("not an integer"))?;
        if v < min {
            return Err(self.invalid(&format!("must be at least {min}")));
        }
        Ok(v)
    }

    /// An INT of at least `min`.
    pub(crate) fn int(&self, min: i64) -> Result<i32, ConfigError> {
        i32::try_from(self.long(min)?).map_err(|_| self.invalid("out of range for an int"))
    }

    /// An INT in `[min, max]` (Kafka's `Range.between`).
    pub(crate) fn int_between(&self, min: i64, max: i64) -> Result<i32, ConfigError> {
        let v = self.int(min)?;
        if i64::from(v) > max {
            return Err(self.invalid(&format!("must be at most {max}")));
        }
        Ok(v)
    }

    /// A SHORT of at least `min`.
    pub(crate) fn short(&self, min: i64) -> Result<i16, ConfigError> {
        i16::try_from(self.long(min)?).map_err(|_| self.invalid("out of range for a short"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reader_names_the_key_and_value_it_refuses() {
        let p = |value| Property::new("k", value);
        assert_eq!(p(" 7 ").int(1), Ok(7));
        assert_eq!(p("0").long(0), Ok(0));
        assert_eq!(p("32767").short(1), Ok(32767));
        assert_eq!(p("500").int_between(0, 500), Ok(500));
        assert_eq!(
            p("501").int_between(0, 500).unwrap_err().reason,
            "must be at most 500"
        );
        for (result, reason) in [
            (p("x").long(0).unwrap_err(), "not an integer"),
            (p("0").long(1).unwrap_err(), "must be at least 1"),
            (
                p("2147483648").int(1).unwrap_err(),
                "out of range for an int",
            ),
            (p("32768").short(1).unwrap_err(), "out of range for a short"),
        ] {
            assert_eq!(result.key, "k");
            assert_eq!(result.reason, reason);
        }
        assert_eq!(
            p("x").long(0).unwrap_err().to_string(),
            "invalid value \"x\" for k: not an integer"
        );
    }
}
