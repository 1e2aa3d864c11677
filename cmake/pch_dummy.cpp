// Anchor translation unit for the shared precompiled torch header.
