"""What the next provider request holds: context/assemble's rules and shapes."""
