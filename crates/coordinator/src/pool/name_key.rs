//! Station names as keys of the pool's name→id map, short ones stored in
//! the map's own slot.
//!
//! Every ad is looked up by its station's name. With `String` keys that is
//! three cache misses in a pool of 10 000 (the table's control bytes, the
//! slot, the name's bytes elsewhere on the heap); with the name in the slot,
//! two. Names up to [`INLINE`] bytes (host names usually are) are kept so.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Longest name kept in the slot itself.
pub(super) const INLINE: usize = 30;

/// A station name.
#[derive(Clone, Debug)]
pub(super) enum NameKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<str>),
}

impl NameKey {
    pub(super) fn new(name: &str) -> Self {
        match u8::try_from(name.len()) {
            Ok(len) if name.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..name.len()].copy_from_slice(name.as_bytes());
                NameKey::Inline { len, bytes }
            }
            _ => NameKey::Heap(name.into()),
        }
    }

    pub(super) fn as_str(&self) -> &str {
        match self {
            // The bytes are a whole `&str` copied in `new`: valid UTF-8.
            NameKey::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            NameKey::Heap(s) => s,
        }
    }
}

impl Borrow<str> for NameKey {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for NameKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for NameKey {}

/// As the `str` it holds, so that the map is looked up by `&str`.
impl Hash for NameKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Any name, short, long or not ASCII, is found by its `&str`
        /// and by nothing else.
        #[test]
        fn finds_each_name_by_its_str(names in proptest::collection::vec("\\PC{0,40}", 1..30)) {
            let mut map: HashMap<NameKey, usize> = HashMap::new();
            for (i, n) in names.iter().enumerate() {
                map.entry(NameKey::new(n)).or_insert(i);
            }
            for n in &names {
                let k = NameKey::new(n);
                prop_assert_eq!(k.as_str(), n.as_str());
                let first = names.iter().position(|m| m == n);
                prop_assert_eq!(map.get(n.as_str()).copied(), first);
            }
            prop_assert_eq!(map.get("\u{0}no such name\u{0}"), None);
        }
    }
}
