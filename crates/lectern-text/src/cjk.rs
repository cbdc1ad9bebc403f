//! [`is_cjk`], the CJK-ideograph test that both [`crate::normalize`] and [`crate::pronounce`]
//! need: a leaf module, so pronunciation overrides do not depend on the normaliser.

pub fn is_cjk(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c)
}
