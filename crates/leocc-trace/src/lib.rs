//! LEO path traces: the formats users already have (mahimahi capacity, LeoReplayer delay),
//! our own single-file format, the synthetic generator, and the link model that both the
//! simulator and the emulator consume.
