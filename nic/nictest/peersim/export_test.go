package peersim

// Cxgb4Unset is cxgb4Unset, for the tests.
const Cxgb4Unset = cxgb4Unset
