//! Request header lists with JavaScript object semantics. A `None` value is Pi's `null`: it
//! removes a header the wire API would otherwise send by default.

/// Headers in insertion order; `None` deletes a default header.
pub type HeaderList = Vec<(String, Option<String>)>;

/// `{...base, ...override}`: same-named (case-sensitive) keys keep their place and take the new
/// value, new keys are appended.
pub(crate) fn spread(base: Option<HeaderList>, over: Option<HeaderList>) -> Option<HeaderList> {
    if base.is_none() && over.is_none() {
        return None;
    }
    let mut out = base.unwrap_or_default();
    for (name, value) in over.unwrap_or_default() {
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => out.push((name, value)),
        }
    }
    Some(out)
}

/// pi-ai's `mergeHeaders`: an override removes every header whose name matches
/// case-insensitively, then is appended.
pub(crate) fn merge(base: Option<HeaderList>, over: Option<HeaderList>) -> Option<HeaderList> {
    if base.is_none() && over.is_none() {
        return None;
    }
    let mut out = base.unwrap_or_default();
    for (name, value) in over.unwrap_or_default() {
        let lower = name.to_lowercase();
        out.retain(|(n, _)| n.to_lowercase() != lower);
        // JavaScript assignment after `delete`: the key moves to the end.
        out.push((name, value));
    }
    Some(out)
}

pub(crate) fn from_strings(list: Vec<(String, String)>) -> HeaderList {
    list.into_iter().map(|(k, v)| (k, Some(v))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, Option<&str>)]) -> HeaderList {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect()
    }

    #[test]
    fn merge_replaces_case_insensitively_and_moves_to_end() {
        let base = h(&[("Authorization", Some("a")), ("X", Some("1"))]);
        let over = h(&[("authorization", None)]);
        assert_eq!(
            merge(Some(base), Some(over)),
            Some(h(&[("X", Some("1")), ("authorization", None)]))
        );
    }

    #[test]
    fn spread_keeps_positions() {
        let base = h(&[("A", Some("1")), ("B", Some("2"))]);
        let over = h(&[("A", Some("3")), ("a", Some("4"))]);
        assert_eq!(
            spread(Some(base), Some(over)),
            Some(h(&[("A", Some("3")), ("B", Some("2")), ("a", Some("4"))]))
        );
        assert_eq!(spread(None, None), None);
    }
}
