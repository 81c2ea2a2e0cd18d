#![cfg(feature = "ndarray")]
