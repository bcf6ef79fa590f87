/* runner placeholder */
int main(void){return 3;}
