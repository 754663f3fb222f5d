//! Serde for settings that are read from text (`auto`, `cuda:1`, `f16`, a sizer's name or
//! path): serialised as that text, so that a spec's JSON keeps the spelling a user writes, and
//! parsed once, where it is read, into its type.

/// `Serialize` through `Display`, `Deserialize` through `FromStr` (its error shown as is).
macro_rules! serde_as_text {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use serde_as_text;
