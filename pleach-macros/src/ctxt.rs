//! The error collector (`serde_derive`'s `internals/ctxt.rs`): every stage pushes its mistakes here
//! instead of returning early, and the expansion checks it once, so the user sees all of them.

use std::cell::RefCell;

/// Every error found so far. Shared by reference through parsing, the typed view and the checks;
/// [`Ctxt::check`] takes it back and must be called (dropping it unchecked is a bug in the macro).
pub(crate) struct Ctxt {
    /// `None` once checked.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Adds `error`, reported in the order pushed.
    pub(crate) fn push(&self, error: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(error);
        }
    }

    /// Every error pushed, combined into one (each still on its own span), or `Ok` if none was.
    pub(crate) fn check(self) -> syn::Result<()> {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        // A collector dropped unchecked would lose errors: the macro would expand a broken tool.
        assert!(
            std::thread::panicking() || self.errors.borrow().is_none(),
            "pleach-macros dropped its errors without checking them"
        );
    }
}
