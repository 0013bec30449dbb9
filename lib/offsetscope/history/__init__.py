"""Pure folds: decoded events -> generations, transitions, sessions, transactions, lag."""
