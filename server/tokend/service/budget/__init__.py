"""What every budget snapshot carries from outside the conversation."""
