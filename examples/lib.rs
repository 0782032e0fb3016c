//! The examples of pleach are this package's `[[example]]` targets; the library is empty.
