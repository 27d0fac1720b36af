"""The results document (results.json): its models, its store (atomic saves, loading) and the migrations
that lift older schema versions."""
