#include <stdio.h>
int main(void)
{
	printf("APP READY %d\n", _FORTIFY_SOURCE + 0);
	fputs("APP UP\n", stdout);
	return 0;
}
