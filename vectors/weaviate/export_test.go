package weaviate

// SetPageSize sets how many objects one listing query returns and returns
// a function that restores it.
func SetPageSize(n int) (restore func()) {
	old := pageSize
	pageSize = n
	return func() { pageSize = old }
}
