"""One module per rule or runtime check, by family (`torchlint/rules/<family>/`); `torchlint.catalog` finds them."""
